package d5list

import (
	"maps"
	"strings"
	"testing"
)

// A recipe with an image needs a runner that runs images (images=yes, which
// only a process runner with bubblewrap advertises), and for a registry
// image one that pulls from its registry; a recipe without one needs
// nothing beyond its benchmark.
func TestRecipeRunnerNeeds(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	for _, tt := range []struct {
		image string
		want  map[string]string
	}{
		{"", nil},
		{"code/image.tar", map[string]string{LabelImages: "yes"}},
		{"ghcr.io/team/trainer" + digest, map[string]string{LabelImages: "yes", "registry.ghcr.io": "yes"}},
		{"team/trainer" + digest, map[string]string{LabelImages: "yes", "registry.docker.io": "yes"}},
	} {
		if got := (&Recipe{Entrypoint: "code/run.sh", Image: tt.image}).RunnerNeeds(); !maps.Equal(got, tt.want) {
			t.Errorf("image %q needs %v, want %v", tt.image, got, tt.want)
		}
	}
	if got := (*Recipe)(nil).RunnerNeeds(); got != nil {
		t.Errorf("a nil recipe needs %v", got)
	}

	// What a Slurm runner advertises does not take an image job; what a
	// process runner with bubblewrap does, does.
	b := Benchmark{ID: "l2-image"}
	needs := (&Recipe{Entrypoint: "code/run.sh", Image: "code/image.tar"}).RunnerNeeds()
	slurm := map[string]string{LabelRuns: RunsEntrypoint, "cpu_model": "AMD EPYC 9654"}
	process := map[string]string{LabelRuns: RunsEntrypoint, LabelImages: "yes", "cpu_model": "AMD EPYC 9654"}
	if b.RunnableBy(slurm) && HasLabels(slurm, needs) {
		t.Errorf("a Slurm runner's labels %v take an image job needing %v", slurm, needs)
	}
	if !b.RunnableBy(process) || !HasLabels(process, needs) {
		t.Errorf("a process runner's labels %v do not take an image job needing %v", process, needs)
	}
	if got := b.RunnerNeeds(needs); !strings.Contains(got, "images=yes") {
		t.Errorf("the job's page says it needs %q, want images=yes named", got)
	}
}
