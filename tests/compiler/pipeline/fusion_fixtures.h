// HLO fixtures shared by the fusion tests (grouping, tests/compiler/pipeline)
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

}  // namespace podsim::compiler::fusion_fixtures
