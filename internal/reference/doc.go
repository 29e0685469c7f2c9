// Package reference holds, in its tests only, the mutex-based reference
// models of the broker and of a retained type's log, and the fuzz targets
// that run random sequences of operations against both a model and the
// real thing and fail on the first difference.
//
// They live apart from the root package's tests so that fuzzing builds
// only them: the root package's test binary instantiates the broker for a
// few hundred types and takes a minute to compile in each mode.
package reference
