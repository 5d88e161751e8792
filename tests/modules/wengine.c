/* A stand-in for an engine's arithmetic, plain or with the fused multiply-add that FMA contraction
 * makes of a * b + c (WENGINE_FMA: written out, so that every optimization level has it). Built as
 * a shared library that a module links and opts out of its fingerprint (lockstep_add_module(...
 * UNCOVERED libwengine)), twice under one soname: the module file is the same, only the machine
 * code it runs differs. walkers.c compiles it in as a statically linked engine (walkers_plain,
 * walkers_fma). tests/e2e/equal_builds.sh. */
__attribute__((visibility("default"))) float wengine_mix(float a, float b, float c) {
#ifdef WENGINE_FMA
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
