/* A stand-in for a module that links the engine. */
float engine_step(float x);
float game_step(float x) { return engine_step(x); }
