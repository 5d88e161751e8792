/* What the shared libraries export. lockstep's code is compiled with hidden visibility, so the
 * shared libraries (liblockstep_core, liblockstep_net) export exactly what is marked LOCKSTEP_API:
 * the classes and functions of the public headers (the include/ folders), and the few internal
 * ones that liblockstep_net calls in liblockstep_core (marked where they are declared). The
 * static libraries are unaffected. */
#ifndef LOCKSTEP_EXPORT_H
#define LOCKSTEP_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define LOCKSTEP_API __attribute__((visibility("default")))
/* The inside of an exported class (its Impl), which would otherwise take the class's visibility. */
#define LOCKSTEP_LOCAL __attribute__((visibility("hidden")))
#else
#define LOCKSTEP_API
#define LOCKSTEP_LOCAL
#endif

#endif /* LOCKSTEP_EXPORT_H */
