// TileAssignment: iota-form detection, refinement, reshape/transpose.
// Algorithms are ours (see tile_assignment.h for the factor representation).
#include "compiler/sharding/tile_assignment.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace podsim::compiler {
namespace {

using Factors = std::vector<TileAssignment::IotaFactor>;

// Row-major strides of dims.
std::vector<int64_t> row_major_strides(std::span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::vector<int64_t> unravel(int64_t flat, std::span<const int64_t> dims) {
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return index;
}

int64_t value_at(const Factors& factors, int64_t flat) {
  int64_t value = 0;
  for (size_t k = factors.size(); k-- > 0;) {
    value += (flat % factors[k].size) * factors[k].stride;
    flat /= factors[k].size;
  }
  return value;
}

// Finds the canonical iota factors of an explicit array, nullopt if it is not
// an iota array. Greedy from the minor end: the value at position B (the size
// of the block already explained) is the stride of the next factor; the
// factor extends while value(n*B) == n*stride. Any non-iota array is caught by
// the final full comparison.
std::optional<Factors> detect_iota(const std::vector<int64_t>& devices) {
  const int64_t n_total = static_cast<int64_t>(devices.size());
  if (n_total == 0 || devices[0] != 0) return std::nullopt;
  Factors minor_first;
  int64_t block = 1;
  while (block < n_total) {
    const int64_t stride = devices[static_cast<size_t>(block)];
    if (stride <= 0) return std::nullopt;
    int64_t n = 1;
    while ((n + 1) * block <= n_total && devices[static_cast<size_t>(n * block)] == n * stride) {
      ++n;
    }
    if (n_total % (block * n) != 0) return std::nullopt;
    minor_first.push_back({n, stride});
    block *= n;
  }
  // The strides must be the row-major strides of some reshape of iota(N).
  Factors by_stride = minor_first;
  std::sort(by_stride.begin(), by_stride.end(),
            [](const auto& a, const auto& b) { return a.stride < b.stride; });
  int64_t expected = 1;
  for (const auto& f : by_stride) {
    if (f.stride != expected) return std::nullopt;
    expected *= f.size;
  }
  if (expected != n_total) return std::nullopt;
  Factors factors(minor_first.rbegin(), minor_first.rend());
  for (int64_t p = 0; p < n_total; ++p) {
    if (value_at(factors, p) != devices[static_cast<size_t>(p)]) return std::nullopt;
  }
  return canonical_iota_factors(factors);
}

// A factor piece owned by one dim of `dims` (see refine()).
struct Piece {
  TileAssignment::IotaFactor factor;
  int64_t dim;
};

// Common refinement of the array dims and the iota factors (both positional
// major -> minor). Exists iff every dim boundary falls on a factor split that
// keeps both sides whole; a factor of size a*b and stride S split into a
// major part of size a has stride S*b and leaves a minor part of stride S.
std::optional<std::vector<Piece>> refine(std::span<const int64_t> dims, const Factors& factors) {
  std::vector<Piece> pieces;
  size_t i = 0, k = 0;
  int64_t dim_left = dims.empty() ? 1 : dims[0];
  int64_t factor_left = factors.empty() ? 1 : factors[0].size;
  while (true) {
    while (i < dims.size() && dim_left == 1) {
      ++i;
      dim_left = i < dims.size() ? dims[i] : 1;
    }
    while (k < factors.size() && factor_left == 1) {
      ++k;
      factor_left = k < factors.size() ? factors[k].size : 1;
    }
    if (i >= dims.size() || k >= factors.size()) break;
    const int64_t stride = factors[k].stride;
    if (dim_left % factor_left == 0) {
      pieces.push_back({{factor_left, stride}, static_cast<int64_t>(i)});
      dim_left /= factor_left;
      factor_left = 1;
    } else if (factor_left % dim_left == 0) {
      pieces.push_back({{dim_left, stride * (factor_left / dim_left)}, static_cast<int64_t>(i)});
      factor_left /= dim_left;
      dim_left = 1;
    } else {
      return std::nullopt;
    }
  }
  return pieces;
}

}  // namespace

int64_t product_of(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

TileAssignment::TileAssignment() : dims_{1}, iota_(Factors{}) {}

TileAssignment TileAssignment::iota(std::vector<int64_t> dims) {
  TileAssignment t;
  const int64_t n = product_of(dims);
  t.dims_ = std::move(dims);
  t.iota_ = canonical_iota_factors(Factors{{n, 1}});
  return t;
}

TileAssignment TileAssignment::iota(std::vector<int64_t> dims,
                                    std::span<const int64_t> reshape_dims,
                                    std::span<const int64_t> transpose_perm) {
  assert(product_of(dims) == product_of(reshape_dims));
  const auto strides = row_major_strides(reshape_dims);
  Factors factors;
  for (size_t k = 0; k < reshape_dims.size(); ++k) {
    const size_t src = transpose_perm.empty() ? k : static_cast<size_t>(transpose_perm[k]);
    assert(src < reshape_dims.size());
    factors.push_back({reshape_dims[src], strides[src]});
  }
  TileAssignment t;
  t.dims_ = std::move(dims);
  t.iota_ = canonical_iota_factors(factors);
  return t;
}

TileAssignment TileAssignment::from_devices(std::vector<int64_t> dims,
                                            std::vector<int64_t> devices) {
  assert(static_cast<int64_t>(devices.size()) == product_of(dims));
  TileAssignment t;
  t.dims_ = std::move(dims);
  if (auto factors = detect_iota(devices)) {
    t.iota_ = std::move(*factors);
  } else {
    t.iota_.reset();
    t.devices_ = std::make_shared<const std::vector<int64_t>>(std::move(devices));
  }
  return t;
}

int64_t TileAssignment::num_elements() const { return product_of(dims_); }

int64_t TileAssignment::at_flat(int64_t flat_position) const {
  if (iota_) return value_at(*iota_, flat_position);
  return (*devices_)[static_cast<size_t>(flat_position)];
}

int64_t TileAssignment::at(std::span<const int64_t> index) const {
  assert(index.size() == dims_.size());
  int64_t flat = 0;
  for (size_t i = 0; i < dims_.size(); ++i) flat = flat * dims_[i] + index[i];
  return at_flat(flat);
}

std::vector<int64_t> TileAssignment::to_vector() const {
  if (devices_) return *devices_;
  // Odometer over the factors (minor last): each step adds the stride of the
  // digit that increments and takes back the digits that wrap to 0.
  const auto& factors = *iota_;
  const int64_t n = num_elements();
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> digit(factors.size(), 0);
  int64_t value = 0;
  for (int64_t p = 0; p < n; ++p) {
    out[static_cast<size_t>(p)] = value;
    for (size_t k = factors.size(); k-- > 0;) {
      if (++digit[k] < factors[k].size) {
        value += factors[k].stride;
        break;
      }
      digit[k] = 0;
      value -= (factors[k].size - 1) * factors[k].stride;
    }
  }
  return out;
}

std::optional<std::vector<int64_t>> TileAssignment::index_of(int64_t device) const {
  const int64_t n = num_elements();
  if (iota_) {
    if (device < 0 || device >= n) return std::nullopt;
    // Digit of factor k is (device / stride_k) % size_k (strides form a chain).
    int64_t flat = 0;
    for (const auto& f : *iota_) flat = flat * f.size + (device / f.stride) % f.size;
    return unravel(flat, dims_);
  }
  for (int64_t p = 0; p < n; ++p) {
    if ((*devices_)[static_cast<size_t>(p)] == device) return unravel(p, dims_);
  }
  return std::nullopt;
}

TileAssignment TileAssignment::reshape(std::vector<int64_t> new_dims) const {
  assert(product_of(new_dims) == num_elements());
  TileAssignment t = *this;
  t.dims_ = std::move(new_dims);
  return t;
}

TileAssignment TileAssignment::transpose(std::span<const int64_t> perm) const {
  assert(perm.size() == dims_.size());
  std::vector<int64_t> new_dims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) new_dims[i] = dims_[static_cast<size_t>(perm[i])];
  if (iota_) {
    if (auto pieces = refine(dims_, *iota_)) {
      Factors permuted;
      for (int64_t src : perm) {
        for (const auto& piece : *pieces) {
          if (piece.dim == src) permuted.push_back(piece.factor);
        }
      }
      TileAssignment t;
      t.dims_ = std::move(new_dims);
      t.iota_ = canonical_iota_factors(permuted);
      return t;
    }
  }
  // General path: materialise in the new order.
  const auto old_strides = row_major_strides(dims_);
  const int64_t n = num_elements();
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    const auto index = unravel(p, new_dims);
    int64_t old_flat = 0;
    for (size_t i = 0; i < perm.size(); ++i) {
      old_flat += index[i] * old_strides[static_cast<size_t>(perm[i])];
    }
    out[static_cast<size_t>(p)] = at_flat(old_flat);
  }
  return from_devices(std::move(new_dims), std::move(out));
}

TileAssignment TileAssignment::sort_last_dim() const {
  if (dims_.empty()) return *this;
  const int64_t last = static_cast<int64_t>(dims_.size()) - 1;
  if (iota_) {
    if (auto pieces = refine(dims_, *iota_)) {
      // Within a row only the last dim's pieces vary; larger strides first
      // gives ascending values because the strides form a chain.
      Factors factors;
      std::vector<TileAssignment::IotaFactor> last_pieces;
      for (const auto& piece : *pieces) {
        if (piece.dim == last) {
          last_pieces.push_back(piece.factor);
        } else {
          factors.push_back(piece.factor);
        }
      }
      std::sort(last_pieces.begin(), last_pieces.end(),
                [](const auto& a, const auto& b) { return a.stride > b.stride; });
      factors.insert(factors.end(), last_pieces.begin(), last_pieces.end());
      TileAssignment t;
      t.dims_ = dims_;
      t.iota_ = canonical_iota_factors(factors);
      return t;
    }
  }
  auto values = to_vector();
  const auto row = static_cast<size_t>(dims_.back());
  if (row == 0) return *this;
  for (size_t start = 0; start < values.size(); start += row) {
    std::sort(values.begin() + static_cast<std::ptrdiff_t>(start),
              values.begin() + static_cast<std::ptrdiff_t>(start + row));
  }
  return from_devices(dims_, std::move(values));
}

std::optional<std::vector<std::vector<TileAssignment::IotaFactor>>> TileAssignment::factors_by_dim()
    const {
  if (!iota_) return std::nullopt;
  auto pieces = refine(dims_, *iota_);
  if (!pieces) return std::nullopt;
  std::vector<std::vector<IotaFactor>> out(dims_.size());
  for (const auto& piece : *pieces) out[static_cast<size_t>(piece.dim)].push_back(piece.factor);
  return out;
}

std::optional<TileAssignment::IotaForm> TileAssignment::iota_form() const {
  if (!iota_) return std::nullopt;
  IotaForm form;
  if (iota_->size() <= 1) {
    form.reshape_dims = {num_elements()};
    return form;
  }
  // r = factor sizes ordered by decreasing stride; p[k] = where factor k sits in r.
  std::vector<size_t> order(iota_->size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return (*iota_)[a].stride > (*iota_)[b].stride; });
  form.transpose_perm.assign(iota_->size(), 0);
  for (size_t r = 0; r < order.size(); ++r) {
    form.reshape_dims.push_back((*iota_)[order[r]].size);
    form.transpose_perm[order[r]] = static_cast<int64_t>(r);
  }
  return form;
}

std::string TileAssignment::to_string() const {
  std::string out = fmt::format("[{}]", fmt::join(dims_, ","));
  if (auto form = iota_form()) {
    out += fmt::format("<=[{}]", fmt::join(form->reshape_dims, ","));
    if (!form->transpose_perm.empty()) {
      out += fmt::format("T({})", fmt::join(form->transpose_perm, ","));
    }
    return out;
  }
  return out + fmt::format("{}", fmt::join(*devices_, ","));
}

bool TileAssignment::operator==(const TileAssignment& other) const {
  if (dims_ != other.dims_) return false;
  if (iota_.has_value() != other.iota_.has_value()) return false;
  if (iota_) return *iota_ == *other.iota_;
  return *devices_ == *other.devices_;
}

std::vector<TileAssignment::IotaFactor> canonical_iota_factors(
    const std::vector<TileAssignment::IotaFactor>& factors) {
  std::vector<TileAssignment::IotaFactor> out;
  for (const auto& f : factors) {
    if (f.size == 1) continue;
    if (!out.empty() && out.back().stride == f.stride * f.size) {
      out.back().size *= f.size;
      out.back().stride = f.stride;
    } else {
      out.push_back(f);
    }
  }
  return out;
}

}  // namespace podsim::compiler
