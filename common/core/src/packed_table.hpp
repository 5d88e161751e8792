// The packed items (input.hpp) of a FlatBuffers table that carries them as the four vectors
// input_bytes, command_counts, command_sizes and command_bytes: a replay's Frames
// (schemas/replay.fbs). Views into the buffer. (The wire's play messages have an encoding of
// their own: play_wire.cpp.)
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <span>

#include "lockstep/input.hpp"

namespace lockstep {

/// A FlatBuffers vector as a span; an absent vector is empty.
template <class T>
std::span<const T> span_of(const flatbuffers::Vector<T>* v) {
  return v ? std::span<const T>(v->data(), v->size()) : std::span<const T>();
}

template <class Table>
PackedView packed_view(const Table& t) {
  return {span_of(t.input_bytes()), span_of(t.command_counts()), span_of(t.command_sizes()),
          span_of(t.command_bytes())};
}

}  // namespace lockstep
