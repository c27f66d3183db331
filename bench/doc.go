// Package bench holds the performance benchmarks of waldur-gitops. It has no
// code of its own: the benchmarks live in its _test.go files and run on
// synthetic Waldur state from internal/testenv/synth.
//
// Run them with
//
//	go test ./bench -run '^$' -bench . -benchtime 3x -count 1 -timeout 30m
//
// The goals they are measured against (10,000 tenants rendered to a directory
// in at most 3 s and 500 MiB peak RSS on a 2-core machine) and the latest
// results are in BENCHMARKS.md at the repository root. Goals are checked by
// reading benchmark output, never by timed assertions in tests.
package bench
