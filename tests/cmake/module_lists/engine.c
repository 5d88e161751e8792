/* A stand-in for a physics engine the module links. */
float engine_step(float x) { return x; }
