package harness

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTrainingAuditStudy measures, for each seed in D5LIST_AUDIT_SEEDS
// (comma-separated), how far each of the 30 epochs of the PyTorch example's
// network lands from the runner's float64 recomputation, relative to the
// epoch's step: trained honestly, and with one minibatch left out of every
// epoch. It is where BENCHMARKS.md's figures for the training audit's
// tolerance come from (about 20 s a seed and case on two cores):
//
//	D5LIST_AUDIT_SEEDS=1,2,3 go test ./harness -run TrainingAuditStudy -v
func TestTrainingAuditStudy(t *testing.T) {
	list := os.Getenv("D5LIST_AUDIT_SEEDS")
	if list == "" {
		t.Skip("training audit study: set D5LIST_AUDIT_SEEDS to the seeds to train, such as 1,2,3")
	}
	needTorchTraining(t)
	const epochs = 30
	task := trainingTestTask(t, []any{int64(512), int64(512)}, 32, epochs)
	for _, field := range strings.Split(list, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
		if err != nil {
			t.Fatalf("D5LIST_AUDIT_SEEDS: %q is not a seed", field)
		}
		for _, c := range []struct{ name, forge string }{{"honest", "skip = 0"}, {"one minibatch left out of every epoch", "skip = 0\ndrop = 20"}} {
			rel, _ := auditEachEpoch(t, task, seed, c.forge)
			worst := slices.Index(rel, slices.Max(rel)) + 1
			least := slices.Index(rel, slices.Min(rel)) + 1
			t.Logf("seed %d, %s: largest %.3g (epoch %d), smallest %.3g (epoch %d); by epoch %.3g", seed, c.name, rel[worst-1], worst, rel[least-1], least, rel)
		}
	}
}
