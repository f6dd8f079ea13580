// Package workloads holds the portal's own CPU reference workloads. Each one
// runs in process, single-threaded and in pure Go, and writes one run's MLPerf
// MLLOG. The runner's builtin executor finds them by name (Lookup); a
// benchmark's Workload field says which one re-runs it.
//
// The Level 2 workload "digits-mlp" trains a one-hidden-layer perceptron on a
// synthetic digits data set until a target test accuracy. It uses float64 and
// a fixed order of operations, so one binary and one seed always produce the
// same accuracy sequence, which lets the verifier compare accuracies with a
// tolerance of zero.
//
// The Level 3 workload "digits-mlp-dp" trains the same model data-parallel
// across worker processes: this binary re-executed, reached through
// ServeWorkerIfAsked, which main and the TestMain of packages that run it
// call first. Gradients are summed in rank order, so a seed and a worker
// count stay deterministic too.
package workloads
