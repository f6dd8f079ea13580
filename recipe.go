package d5list

import "strings"

// Recipe is a Deep500 recipe: fixed and mutable definitions plus the metrics
// that are acceptable. Values are plain JSON-like data (string, float64,
// int64, bool, nil, []any, map[string]any) or Symbol.
type Recipe struct {
	Fixed   map[string]any `json:"fixed" yaml:"fixed"`
	Mutable map[string]any `json:"mutable" yaml:"mutable"`
	Metrics []MetricSpec   `json:"metrics" yaml:"metrics"`
	// Entrypoint is the bundle-relative program the process executor runs
	// (for example "code/run.sh"); empty for builtin workloads.
	Entrypoint string `json:"entrypoint,omitempty" yaml:"entrypoint"`
	// Image is the container image whose file system the entrypoint runs
	// in, as `/` of the sandbox: an image archive in the bundle (as
	// `docker save` writes one), or a registry reference pinned by digest
	// (HOST/REPO@sha256:HEX, see IsRegistryImage); empty runs it on the
	// runner's own /usr.
	Image string `json:"image,omitempty" yaml:"image"`
}

// LabelRegistryPrefix starts the runner label that says a runner pulls
// images from a registry: "registry.ghcr.io=yes".
const LabelRegistryPrefix = "registry."

// IsRegistryImage reports whether a recipe's image is a registry
// reference (pinned by digest) rather than an archive in the bundle.
func IsRegistryImage(image string) bool { return strings.Contains(image, "@sha256:") }

// ImageRegistry is the registry host a registry reference names, by the
// rule docker and podman apply: the first path component when it has a
// '.' or a ':' or is "localhost", else Docker Hub.
func ImageRegistry(image string) string {
	first, rest, found := strings.Cut(image, "/")
	if found && rest != "" && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}

// LabelImages is the runner label that says a runner runs recipe images
// ("images=yes"). Only a process runner with bubblewrap advertises it: a
// Slurm runner, or a process runner without bubblewrap, would lease a job
// with an image only to refuse it, spending its attempts.
const LabelImages = "images"

// LabelDatasetPrefix starts the runner label that says a runner has a
// data set: "dataset.cifar10=yes".
const LabelDatasetPrefix = "dataset."

// RunnerCapability reports whether a runner label says which jobs a
// runner can take (recipe images, a registry, a data set) rather than
// what a run computes with: a claim's machine records none of them, and
// their difference explains no result.
func RunnerCapability(label string) bool {
	return label == LabelImages || strings.HasPrefix(label, LabelRegistryPrefix) || strings.HasPrefix(label, LabelDatasetPrefix)
}

// RunnerNeeds are the runner labels the recipe itself needs beyond its
// benchmark's requires: for an image, a runner that runs images, and for
// a registry image, one that pulls from its registry.
func (r *Recipe) RunnerNeeds() map[string]string {
	if r == nil || r.Image == "" {
		return nil
	}
	needs := map[string]string{LabelImages: "yes"}
	if IsRegistryImage(r.Image) {
		needs[LabelRegistryPrefix+ImageRegistry(r.Image)] = "yes"
	}
	return needs
}

// RecipePlan is what a builtin workload will measure for a recipe, read
// from it before anything runs.
type RecipePlan struct {
	// Shapes are the operator shapes of a Level 0 run, in the order the
	// run logs them (their metadata.shape); empty for other levels.
	Shapes []string
}

// Get returns the value of key from Mutable, falling back to Fixed.
func (r *Recipe) Get(key string) (any, bool) {
	if v, ok := r.Mutable[key]; ok {
		return v, true
	}
	v, ok := r.Fixed[key]
	return v, ok
}

// MetricSpec is one acceptable metric. Acceptable nil means "not checked",
// as in Deep500.
type MetricSpec struct {
	Name       string         `json:"name" yaml:"name"`
	Acceptable *float64       `json:"acceptable" yaml:"acceptable"`
	Direction  Direction      `json:"direction,omitempty" yaml:"direction"`
	Args       map[string]any `json:"args,omitempty" yaml:"args"`
}

// Symbol is a reference to code in a Deep500 Python recipe: a dotted name
// such as d5.ShuffleSampler, or a call such as d5.TestAccuracy(max_acc=True)
// when Call is set.
type Symbol struct {
	Name   string         `json:"symbol" yaml:"symbol"`
	Call   bool           `json:"call,omitempty" yaml:"call"`
	Args   []any          `json:"args,omitempty" yaml:"args"`
	Kwargs map[string]any `json:"kwargs,omitempty" yaml:"kwargs"`
}
