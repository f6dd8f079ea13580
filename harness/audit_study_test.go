package harness

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTrainingAuditStudy measures, for each seed in D5LIST_AUDIT_SEEDS
// (comma-separated), how far each stretch of steps of the 30 epochs of the
// PyTorch example's network lands from the runner's float64 recomputation,
// relative to the stretch's step: trained honestly, and with one minibatch
// left out of every epoch (only the stretches that held it). It is where
// BENCHMARKS.md's figures for the training audit's tolerance come from:
//
//	D5LIST_AUDIT_SEEDS=1,2,3 go test ./harness -run TrainingAuditStudy -v
func TestTrainingAuditStudy(t *testing.T) {
	list := os.Getenv("D5LIST_AUDIT_SEEDS")
	if list == "" {
		t.Skip("training audit study: set D5LIST_AUDIT_SEEDS to the seeds to train, such as 1,2,3")
	}
	needTorchTraining(t)
	const epochs, drop = 30, 20
	task := trainingTestTask(t, []any{int64(512), int64(512)}, 32, epochs, 0)
	task.StateEvery = stateEvery(epochs*task.stepsPerEpoch(), auditsPerSection(5))
	task.sections = []section{trainingSection(task)}
	for _, field := range strings.Split(list, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
		if err != nil {
			t.Fatalf("D5LIST_AUDIT_SEEDS: %q is not a seed", field)
		}
		_, st := runPythonTraining(t, task, seed, "")
		honest, failed := auditEachStretch(task, seed, st)
		_, st = runPythonTraining(t, task, seed, "drop = "+strconv.Itoa(drop))
		all, _ := auditEachStretch(task, seed, st)
		var forged []float64
		for e := 1; e <= epochs; e++ {
			forged = append(forged, all[(e-1)*task.stretchesPerEpoch()+drop/task.StateEvery])
		}
		t.Logf("seed %d, stretches of %d steps: honest largest %.3g (%d of %d over the tolerance); one minibatch left out: smallest %.3g, largest %.3g",
			seed, task.StateEvery, slices.Max(honest), len(failed), len(honest), slices.Min(forged), slices.Max(forged))
	}
}
