package verifier

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// copyDir copies the folder src to dst (created), files and folders.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func offeredRounds(err error) []string {
	var out []string
	for _, r := range d5list.ErrorReasons(err) {
		if r.Code == CodeMLPerfRound {
			out = append(out, r.Message)
		}
	}
	return out
}

// A folder or tree whose path names no round is judged by the round its
// benchmarks tell where only one round has them all, and refused with the
// rounds that have them where several do: never the newest guessed.
func TestCheckMLPerfNeverGuessesTheRound(t *testing.T) {
	// Published trees moved to folders that name no round.
	tinycorp := filepath.Join(t.TempDir(), "tinycorp") // bert and retinanet: only round 5.0 has both
	copyDir(t, filepath.Join(mlperfTestdata, "v5.0", "tinycorp"), tinycorp)
	nvidia := filepath.Join(t.TempDir(), "NVIDIA") // flux1 and llama31_405b: rounds 5.1 and 6.0
	copyDir(t, filepath.Join(mlperfTestdata, "v5.1", "NVIDIA"), nvidia)
	fujitsu := filepath.Join(t.TempDir(), "Fujitsu") // unet3d: rounds 1.0 to 4.0
	copyDir(t, filepath.Join(mlperfTestdata, "v4.0", "Fujitsu"), fujitsu)
	folder := filepath.Join(t.TempDir(), "unet3d") // one benchmark folder of it
	copyDir(t, filepath.Join(fujitsu, "results", "GX2560M7_H100_SXM_80GBx4", "unet3d"), folder)

	rep, _, err := CheckMLPerfPath(tinycorp, "")
	if err != nil {
		t.Fatalf("tinycorp (bert and retinanet, only in 5.0): %v", err)
	}
	if tree := rep.(*MLPerfTreeReport); tree.Round != "5.0" {
		t.Errorf("tinycorp judged by round %s, want 5.0", tree.Round)
	}
	for _, c := range []struct {
		path   string
		rounds []string
	}{
		{nvidia, []string{"5.1", "6.0"}},
		{fujitsu, []string{"1.0", "1.1", "2.0", "2.1", "3.0", "3.1", "4.0"}},
		{folder, []string{"1.0", "1.1", "2.0", "2.1", "3.0", "3.1", "4.0"}},
	} {
		_, _, err := CheckMLPerfPath(c.path, "")
		if d5list.ErrorCode(err) != d5list.EINVALID || !RoundUnknown(err) {
			t.Fatalf("%s: %v, want the round asked for", c.path, err)
		}
		if got := offeredRounds(err); !slices.Equal(got, c.rounds) {
			t.Errorf("%s: offers rounds %v, want %v", c.path, got, c.rounds)
		}
		msg := d5list.ErrorMessage(err)
		if !strings.HasPrefix(msg, c.path+": ") || !strings.Contains(msg, "round cannot be told") || !strings.Contains(msg, strings.Join(c.rounds, ", ")) {
			t.Errorf("%s: message %q", c.path, msg)
		}
		// Given, the round judges it.
		rep, _, err := CheckMLPerfPath(c.path, c.rounds[len(c.rounds)-1])
		if err != nil {
			t.Fatalf("%s with round %s: %v", c.path, c.rounds[len(c.rounds)-1], err)
		}
		round := ""
		switch r := rep.(type) {
		case *MLPerfTreeReport:
			round = r.Round
		case *MLPerfReport:
			round = r.Round
		}
		if round != c.rounds[len(c.rounds)-1] {
			t.Errorf("%s: judged by %s", c.path, round)
		}
	}
	// A round d5list does not know offers every round it knows.
	_, _, err = CheckMLPerfPath(folder, "9.9")
	if got := offeredRounds(err); !slices.Equal(got, MLPerfRoundNames()) || !strings.Contains(d5list.ErrorMessage(err), "9.9 is not one d5list knows") {
		t.Errorf("round 9.9: %v, offers %v", err, got)
	}
}

// A path that cannot be checked says why, with the path as given: it does
// not exist, it is a file, a part of it is a file, the folder or a result
// file cannot be read.
func TestCheckMLPerfInputErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "result_0.txt")
	if err := os.WriteFile(file, []byte(":::MLLOG {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, says string }{
		{filepath.Join(dir, "missing"), "missing: no such file or folder"},
		{file, "result_0.txt: not a folder"},
		{filepath.Join(file, "x"), "result_0.txt/x: no such file or folder (a part of the path is a file, not a folder)"},
	}
	for _, c := range cases {
		_, _, err := CheckMLPerfPath(c.path, "4.0")
		if d5list.ErrorCode(err) != d5list.EINVALID || !strings.HasPrefix(d5list.ErrorMessage(err), c.path+": ") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want invalid saying %q", c.path, err, c.says)
		}
	}
	if os.Geteuid() == 0 {
		t.Skip("root reads every file: the permission cases need another user")
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	if _, _, err := CheckMLPerfPath(locked, "4.0"); !strings.Contains(err.Error(), locked+": the folder cannot be read: permission denied") {
		t.Errorf("unreadable folder: %v", err)
	}
	src := filepath.Join(peer, "v4.0-asustek-resnet")
	if _, err := os.Stat(src); err != nil {
		t.Skip("peer data not available")
	}
	folder := filepath.Join(dir, "v4.0-resnet")
	copyDir(t, src, folder)
	if err := os.Chmod(filepath.Join(folder, "result_2.txt"), 0o000); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CheckMLPerfPath(folder, ""); !strings.Contains(err.Error(), filepath.Join(folder, "result_2.txt")+": cannot be read: permission denied") {
		t.Errorf("unreadable result file: %v", err)
	}
}
