// HLO fixtures shared by the fusion tests (grouping, tests/compiler/backend)
// and the kernel-cost tests (bytes, tests/sim).
#pragma once

namespace podsim::compiler::fusion_fixtures {

// Add and max reducers for the fixtures' reduces.
constexpr const char* kReducers = R"(
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}
)";

// Softmax y = e / broadcast(sum(e)), e = exp(x - broadcast(max(x))), whose
// denominator bz is also read by a second consumer t = dy / bz (as softmax's
// gradient reads it). bz reads 1/256 of its bytes (z): it is recomputed in
// both y's and t's kernels, which then stay kernels (of one op and bz)
// instead of unfused divides reading a written bz. ex is exp (expensive)
// with three readers: not duplicated; its loop kernel {bm, s, ex} is taken
// into the sum's kernel (multi-output fusion: y and t come after z), which
// writes ex and z.
constexpr const char* kSoftmaxWithSharedDenominator = R"(
ENTRY %e (x: f32[64,256], dy: f32[64,256]) -> (f32[64,256], f32[64,256]) {
  %x = f32[64,256] parameter(0)
  %dy = f32[64,256] parameter(1)
  %ninf = f32[] constant(-inf)
  %mx = f32[64] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %bm = f32[64,256] broadcast(%mx), dimensions={0}
  %s = f32[64,256] subtract(%x, %bm)
  %ex = f32[64,256] exponential(%s)
  %zero = f32[] constant(0)
  %z = f32[64] reduce(%ex, %zero), dimensions={1}, to_apply=%sum
  %bz = f32[64,256] broadcast(%z), dimensions={0}
  %y = f32[64,256] divide(%ex, %bz)
  %t = f32[64,256] divide(%dy, %bz)
  ROOT %r = (f32[64,256], f32[64,256]) tuple(%y, %t)
})";

// The partitioner's per-device constant: ds = dynamic-slice(broadcast(0.5))
// (a slice of a broadcast scalar at a device offset i) scales p and q in two
// kernels, each followed by a tanh.
constexpr const char* kScaledBySliceOfBroadcast = R"(
ENTRY %e (p: f32[8,1024], q: f32[8,1024], i: s32[]) -> (f32[8,1024], f32[8,1024]) {
  %p = f32[8,1024] parameter(0)
  %q = f32[8,1024] parameter(1)
  %i = s32[] parameter(2)
  %c = f32[] constant(0.5)
  %big = f32[64,1024] broadcast(%c), dimensions={}
  %z = s32[] constant(0)
  %ds = f32[8,1024] dynamic-slice(%big, %i, %z), dynamic_slice_sizes={8,1024}
  %a = f32[8,1024] multiply(%p, %ds)
  %ta = f32[8,1024] tanh(%a)
  %b = f32[8,1024] multiply(%q, %ds)
  %tb = f32[8,1024] tanh(%b)
  ROOT %r = (f32[8,1024], f32[8,1024]) tuple(%ta, %tb)
})";

// e = exp(a * b) is reduced by z and read again by y = e / broadcast(z),
// which comes after z (reads kReducers' %sum).
constexpr const char* kNormalize = R"(
ENTRY %e (a: f32[64,256], b: f32[64,256]) -> f32[64,256] {
  %a = f32[64,256] parameter(0)
  %b = f32[64,256] parameter(1)
  %m = f32[64,256] multiply(%a, %b)
  %e = f32[64,256] exponential(%m)
  %zero = f32[] constant(0)
  %z = f32[64] reduce(%e, %zero), dimensions={1}, to_apply=%sum
  %bz = f32[64,256] broadcast(%z), dimensions={0}
  ROOT %y = f32[64,256] divide(%e, %bz)
})";

}  // namespace podsim::compiler::fusion_fixtures
