package bundle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

type member struct {
	name string
	body string
	link bool
}

func tarGzOf(t *testing.T, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg}
		if m.link {
			h = &tar.Header{Name: m.name, Linkname: m.body, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if !m.link {
			if _, err := tw.Write([]byte(m.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		w, err := zw.Create(m.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestExtractMLPerf(t *testing.T) {
	folder := []member{
		{name: "ssd/result_0.txt", body: ":::MLLOG {}\n"},
		{name: "ssd/result_1.txt", body: ":::MLLOG {}\n"},
		{name: "ssd/system.json", body: "{}"},
		{name: "ssd/scaling.json", body: `{"scaling_factor": 1.01}`},
		{name: "ssd/compliance_result.out", body: "SUCCESS"},
		{name: "other/result_2.txt", body: "x"},
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"tar.gz in a folder", tarGzOf(t, folder)}, {"zip in a folder", zipOf(t, folder)}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			root, ignored, err := ExtractMLPerf(bytes.NewReader(c.data), dir, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if root != filepath.Join(dir, "ssd") {
				t.Errorf("root %s", root)
			}
			if got := listDir(t, root); !slices.Equal(got, []string{"result_0.txt", "result_1.txt", "scaling.json", "system.json"}) {
				t.Errorf("extracted %v", got)
			}
			if !slices.Equal(ignored, []string{"ssd/compliance_result.out", "other/result_2.txt"}) {
				t.Errorf("ignored %v", ignored)
			}
		})
	}

	refused := []struct {
		name string
		data []byte
		msg  string
	}{
		{"a link", tarGzOf(t, []member{{name: "result_0.txt", body: "/etc/passwd", link: true}}), "not a regular file"},
		{"a name leaving the folder", tarGzOf(t, []member{{name: "../result_0.txt", body: "x"}}), `".." in entry name`},
		{"a file given twice", tarGzOf(t, []member{{name: "result_0.txt", body: "x"}, {name: "./result_0.txt", body: "y"}}), "given twice"},
		{"no result file", zipOf(t, []member{{name: "README.md", body: "x"}}), "no result_<i>.txt"},
		{"not an archive", []byte("result_0.txt"), "neither a .tar.gz nor a .zip"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, _, err := ExtractMLPerf(bytes.NewReader(c.data), dir, DefaultLimits())
			if d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want %q", err, c.msg)
			}
			if got := listDir(t, dir); len(got) != 0 {
				t.Errorf("a refused archive left %v", got)
			}
		})
	}

	t.Run("over the file limit", func(t *testing.T) {
		lim := DefaultLimits()
		lim.MaxFileBytes = 10
		_, _, err := ExtractMLPerf(bytes.NewReader(tarGzOf(t, []member{{name: "result_0.txt", body: strings.Repeat("x", 11)}})), t.TempDir(), lim)
		if d5list.ErrorCode(err) != d5list.ETOOLARGE {
			t.Fatalf("got %v", err)
		}
	})
}

// A submission tree keeps its layout, in the folders it is packed in
// (MLCommons' repository and the organisation): the system descriptions
// and each benchmark folder's files, and nothing of the code beside them.
func TestExtractMLPerfTree(t *testing.T) {
	tree := []member{
		{name: "training_results_v5.0/README.md", body: "x"},
		{name: "training_results_v5.0/tinycorp/systems/tinybox_green.json", body: "{}"},
		{name: "training_results_v5.0/tinycorp/results/tinybox_green/package_checker_params", body: "rcp-bypass"},
		{name: "training_results_v5.0/tinycorp/results/tinybox_green/bert/result_0.txt", body: ":::MLLOG {}\n"},
		{name: "training_results_v5.0/tinycorp/results/tinybox_green/bert/scaling.json", body: "{}"},
		{name: "training_results_v5.0/tinycorp/results/tinybox_green/bert/result_a.txt", body: ":::MLLOG {}\n"},
		{name: "training_results_v5.0/tinycorp/benchmarks/bert/implementations/tinybox/train.py", body: "print()"},
		{name: "training_results_v5.0/tinycorp/systems/notes.txt", body: "x"},
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"tar.gz", tarGzOf(t, tree)}, {"zip", zipOf(t, tree)}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			root, ignored, err := ExtractMLPerf(bytes.NewReader(c.data), dir, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if root != filepath.Join(dir, "training_results_v5.0", "tinycorp") {
				t.Fatalf("root %s", root)
			}
			var got []string
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					got = append(got, filepath.ToSlash(rel))
				}
				return err
			})
			want := []string{"results/tinybox_green/bert/result_0.txt", "results/tinybox_green/bert/result_a.txt", "results/tinybox_green/bert/scaling.json",
				"results/tinybox_green/package_checker_params", "systems/tinybox_green.json"}
			if !slices.Equal(got, want) {
				t.Errorf("extracted %v, want %v", got, want)
			}
			if !slices.Equal(ignored, []string{"training_results_v5.0/README.md", "training_results_v5.0/tinycorp/benchmarks/bert/implementations/tinybox/train.py", "training_results_v5.0/tinycorp/systems/notes.txt"}) {
				t.Errorf("ignored %v", ignored)
			}
		})
	}
}
