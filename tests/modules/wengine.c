/* A stand-in for an engine a module links as a shared library and opts out of its fingerprint
 * (lockstep_add_module(... UNCOVERED libwengine)), built twice under one soname: once as lockstep's
 * flags build it, once with FMA contraction (WENGINE_FMA: the fused multiply-add written out, so
 * every optimization level has it). The module file is the same; only the machine code it runs
 * differs (tests/e2e/equal_builds.sh). */
__attribute__((visibility("default"))) float wengine_mix(float a, float b, float c) {
#ifdef WENGINE_FMA
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
