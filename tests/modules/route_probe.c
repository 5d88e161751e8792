/* A library that calls libm, as a prebuilt physics engine does (Box2D's b2Rot::Set): the library a
 * test module lists as ROUTED, so that core/module-lib can see its calls reach lockstep's math. */
#define _GNU_SOURCE
#include <math.h>

__attribute__((visibility("default"))) float route_probe_sinf(float x) { return sinf(x); }
__attribute__((visibility("default"))) void route_probe_sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
__attribute__((visibility("default"))) double route_probe_pow(double x, double y) { return pow(x, y); }
/* cosf taken as a pointer: a GOT slot of its own, not a PLT call. */
__attribute__((visibility("default"))) void* route_probe_cosf_address(void) { return (void*)&cosf; }
/* A transcendental lockstep has no function for: left on libm, and said so. */
__attribute__((visibility("default"))) double route_probe_sinh(double x) { return sinh(x); }
