package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func TestOpenValidBundles(t *testing.T) {
	wrapped := func(prefix string) []ent {
		out := []ent{{name: prefix, typ: tar.TypeDir}}
		for _, e := range validEntries() {
			e.name = prefix + e.name
			out = append(out, e)
		}
		return out
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"flat tar.gz", tarGz(t, validEntries())},
		{"flat zip", zipBytes(t, validEntries())},
		{"wrapped in a folder", tarGz(t, wrapped("my-submission/"))},
		{"wrapped zip", zipBytes(t, wrapped("sub/"))},
		{"dot-slash names", tarGz(t, wrapped("./"))},
		{"git archive global header", tarGz(t, with([]ent{{name: "pax_global_header", typ: tar.TypeXGlobalHeader}}, validEntries()...))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The name lies on purpose: the format is told by content.
			b, err := Open(writeTemp(t, "bundle.bin", tc.data), DefaultLimits())
			if err != nil {
				t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
			}
			if b.Manifest.Benchmark != "l2-digits-mlp-cpu" || b.ManifestFile != "submission.json" {
				t.Errorf("manifest %+v", b.Manifest)
			}
			if b.RecipeFile != "recipe.yaml" || b.Recipe.Fixed["epochs"] != int64(40) {
				t.Errorf("recipe %s %+v", b.RecipeFile, b.Recipe)
			}
			if b.System.SystemName != "cpu-box" || b.SystemFile != "system.json" {
				t.Errorf("system %+v", b.System)
			}
			if len(b.Results) != 2 || b.Results[0].Name != "results/result_0.txt" || b.Results[1].Index != 1 || string(b.Results[0].Data) != runLog {
				t.Errorf("results %+v", b.Results)
			}
			if len(b.Files) != 7 {
				t.Errorf("files %+v", b.Files)
			}
		})
	}
}

func TestReadStreamsTarGzAndRefusesZip(t *testing.T) {
	b, err := Read(bytes.NewReader(tarGz(t, validEntries())), DefaultLimits())
	if err != nil || len(b.Results) != 2 {
		t.Fatalf("tar.gz stream: %v", err)
	}
	_, err = Read(bytes.NewReader(zipBytes(t, validEntries())), DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "Open") {
		t.Errorf("zip stream: %v", err)
	}
	_, err = Read(strings.NewReader("plain text"), DefaultLimits())
	if d5list.ErrorCode(err) != d5list.EINVALID {
		t.Errorf("text: %v", err)
	}
}

// refusal is what a bad bundle must be refused with.
type refusal struct {
	code, file, msg string
	errCode         string
}

func checkRefusal(t *testing.T, err error, want refusal) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	errCode := want.errCode
	if errCode == "" {
		errCode = d5list.EINVALID
	}
	if got := d5list.ErrorCode(err); got != errCode {
		t.Errorf("error code %s, want %s (%v)", got, errCode, err)
	}
	for _, r := range d5list.ErrorReasons(err) {
		if r.Code == want.code && r.File == want.file && strings.Contains(r.Message, want.msg) {
			return
		}
	}
	t.Errorf("no reason {%s %s %q} in %+v", want.code, want.file, want.msg, d5list.ErrorReasons(err))
}

func badBundles() []struct {
	name string
	ents []ent
	want refusal
} {
	v := validEntries()
	many := with([]ent{}, v...)
	for i := 0; i < 10000; i++ {
		many = append(many, ent{name: fmt.Sprintf("code/f%05d.txt", i), body: "x"})
	}
	return []struct {
		name string
		ents []ent
		want refusal
	}{
		{"zip slip", with(v, ent{name: "../evil.txt", body: "x"}), refusal{CodeUnsafePath, "../evil.txt", `".."`, ""}},
		{"zip slip inside", with(v, ent{name: "code/../../evil.txt", body: "x"}), refusal{CodeUnsafePath, "code/../../evil.txt", `".."`, ""}},
		{"absolute path", with(v, ent{name: "/etc/cron.d/x", body: "x"}), refusal{CodeUnsafePath, "/etc/cron.d/x", "absolute", ""}},
		{"windows drive", with(v, ent{name: "C:/x", body: "x"}), refusal{CodeUnsafePath, "C:/x", "absolute", ""}},
		{"backslash", with(v, ent{name: `code\..\..\evil.txt`, body: "x"}), refusal{CodeUnsafePath, `code\..\..\evil.txt`, "backslash", ""}},
		{"symlink", with(v, ent{name: "code/passwd", typ: tar.TypeSymlink, link: "/etc/passwd"}), refusal{CodeUnsafeEntry, "code/passwd", "symbolic link", ""}},
		{"hard link", with(v, ent{name: "code/shadow", typ: tar.TypeLink, link: "/etc/shadow"}), refusal{CodeUnsafeEntry, "code/shadow", "hard link", ""}},
		{"fifo", with(v, ent{name: "code/pipe", typ: tar.TypeFifo}), refusal{CodeUnsafeEntry, "code/pipe", "FIFO", ""}},
		{"device", with(v, ent{name: "code/sda", typ: tar.TypeBlock}), refusal{CodeUnsafeEntry, "code/sda", "device", ""}},
		{"duplicate entry", with(v, ent{name: "results/result_0.txt", body: "other"}), refusal{CodeDuplicate, "results/result_0.txt", "duplicate", ""}},
		{"duplicate after cleaning", with(v, ent{name: "./code//run.sh", body: "other"}), refusal{CodeDuplicate, "./code//run.sh", "duplicate entry code/run.sh", ""}},
		{"file and folder", with(v, ent{name: "code/run.sh/x", body: "x"}), refusal{CodeDuplicate, "code/run.sh/x", "which is a file", ""}},
		{"missing system.json", without(v, "system.json"), refusal{CodeMissingFile, "system.json", "missing", ""}},
		{"missing recipe", without(v, "recipe.yaml"), refusal{CodeMissingFile, "recipe.yaml", "missing recipe", ""}},
		{"two recipes", with(v, ent{name: "recipe.py", body: "x"}), refusal{CodeDuplicate, "recipe.py", "more than one recipe", ""}},
		{"no results", without(without(v, "results/result_0.txt"), "results/result_1.txt"), refusal{CodeMissingFile, "results/result_0.txt", "no results", ""}},
		{"unknown top-level file", with(v, ent{name: "sytem.json", body: "{}"}), refusal{CodeUnknownFile, "sytem.json", "did you mean system.json", ""}},
		{"unknown top-level folder", with(v, ent{name: "data/x.bin", body: "x"}), refusal{CodeUnknownFile, "data/x.bin", "unknown top-level folder data", ""}},
		{"result without index", with(v, ent{name: "results/result_.txt", body: runLog}), refusal{CodeResultName, "results/result_.txt", "result_<i>.txt", ""}},
		{"result named run", with(v, ent{name: "results/run_2.txt", body: runLog}), refusal{CodeResultName, "results/run_2.txt", "result_<i>.txt", ""}},
		{"result in subfolder", with(v, ent{name: "results/sys/result_2.txt", body: runLog}), refusal{CodeResultName, "results/sys/result_2.txt", "result_<i>.txt", ""}},
		{"result index twice", with(v, ent{name: "results/result_01.txt", body: runLog}), refusal{CodeDuplicate, "results/result_01.txt", "run index 1 used twice (also results/result_1.txt)", ""}},
		{"bad manifest", append(without(v, "submission.json"), ent{name: "submission.json", body: `{"format": "d5list/v0"}`}), refusal{CodeManifest, "submission.json", "d5list/v1", ""}},
		{"10,000 files", many, refusal{CodeTooLarge, "code/f01993.txt", "more than 2000 entries", d5list.ETOOLARGE}},
	}
}

func TestOpenRefusesBadBundles(t *testing.T) {
	for _, tc := range badBundles() {
		t.Run(tc.name+"/tar.gz", func(t *testing.T) {
			_, err := Open(writeTemp(t, "b.tar.gz", tarGz(t, tc.ents)), DefaultLimits())
			checkRefusal(t, err, tc.want)
		})
		zipOK := true
		for _, e := range tc.ents {
			if e.typ != 0 && e.typ != tar.TypeSymlink && e.typ != tar.TypeDir {
				zipOK = false // zip has no hard links or devices
			}
		}
		if zipOK && tc.name != "10,000 files" {
			t.Run(tc.name+"/zip", func(t *testing.T) {
				_, err := Open(writeTemp(t, "b.zip", zipBytes(t, tc.ents)), DefaultLimits())
				checkRefusal(t, err, tc.want)
			})
		}
	}
}

func TestZipWithTooManyEntriesRefusedBeforeReading(t *testing.T) {
	ents := validEntries()
	for i := 0; i < 3000; i++ {
		ents = append(ents, ent{name: fmt.Sprintf("code/%d", i)})
	}
	data := zipBytes(t, ents)
	_, err := Open(writeTemp(t, "b.zip", data), DefaultLimits())
	checkRefusal(t, err, refusal{CodeTooLarge, "", "zip directory lists more than 2000 entries", d5list.ETOOLARGE})

	// The end record's 16-bit count is no bound (the zip reader compares
	// it modulo 65,536): one that claims 7 entries is counted all the same.
	i := bytes.LastIndex(data, []byte("PK\x05\x06"))
	lied := bytes.Clone(data)
	binary.LittleEndian.PutUint16(lied[i+8:], 7)
	binary.LittleEndian.PutUint16(lied[i+10:], 7)
	_, err = Open(writeTemp(t, "lied.zip", lied), DefaultLimits())
	checkRefusal(t, err, refusal{CodeTooLarge, "", "zip directory lists more than 2000 entries", d5list.ETOOLARGE})
}

func TestOpenCollectsSeveralReasons(t *testing.T) {
	ents := with(without(validEntries(), "system.json"), ent{name: "../x", body: "x"}, ent{name: "notes.txt", body: "x"})
	_, err := Open(writeTemp(t, "b.tgz", tarGz(t, ents)), DefaultLimits())
	if n := len(d5list.ErrorReasons(err)); n != 3 {
		t.Errorf("got %d reasons, want 3: %+v", n, d5list.ErrorReasons(err))
	}
}

// zeroBomb returns a gzip stream, about 1 KiB per MiB of content, of a tar
// holding one file of size MiB of zeros: concatenated gzip members, each
// compressing 1 MiB of zeros, which gzip readers join into one stream.
func zeroBomb(t testing.TB, name string, mib int) []byte {
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(mib) << 20, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	tw.Flush() // the header block only; the zeros follow
	member := func(data []byte) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
		return b.Bytes()
	}
	out := member(hdr.Bytes())
	mb := member(make([]byte, 1<<20))
	for i := 0; i < mib; i++ {
		out = append(out, mb...)
	}
	return append(out, member(make([]byte, 1024))...) // tar end: two zero blocks
}

// consumed counts what a reader took from the archive.
type consumed struct {
	r io.Reader
	n int
}

func (c *consumed) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestBombsAreRefusedEarly(t *testing.T) {
	bomb := zeroBomb(t, "code/zeros.bin", 1024) // about 1 MB inflating to 1 GiB
	head := with(validEntries())
	headTar := tarGz(t, head)
	_ = headTar
	tests := []struct {
		name  string
		data  []byte
		lim   Limits
		msg   string
		limit int // compressed bytes the reader may take before refusing
	}{
		{"file size limit", bomb, Limits{MaxFileBytes: 8 << 20, MaxCompression: 1e9}, "file larger than 8388608", 64 << 10},
		{"total size limit", bomb, Limits{MaxTotalBytes: 8 << 20, MaxCompression: 1e9}, "bundle larger than 8388608", 64 << 10},
		{"compression ratio", bomb, DefaultLimits(), "compression ratio above 100", 32 << 10},
		{"archive size", bomb, Limits{MaxArchiveBytes: 100 << 10, MaxCompression: 1e9}, "archive is larger than 102400", 110 << 10},
		{"held result", zeroBomb(t, "results/result_0.txt", 64), Limits{MaxResultBytes: 1 << 20, MaxCompression: 1e9}, "larger than 1048576 bytes", 16 << 10},
		{"recipe", tarGz(t, with(without(validEntries(), "recipe.yaml"), ent{name: "recipe.yaml", body: validRecipe + strings.Repeat("# padding\n", 40_000)})),
			Limits{}, "recipe.yaml is larger than 262144 bytes", 1 << 20},
		{"held together", tarGz(t, with(validEntries(), ent{name: "results/result_2.txt", body: strings.Repeat(runLog, 3000)}, ent{name: "results/result_3.txt", body: strings.Repeat(runLog, 3000)})),
			Limits{MaxHeldBytes: 500 << 10, MaxCompression: 1e9}, "more than 512000 bytes together", 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &consumed{r: bytes.NewReader(tc.data)}
			_, err := Read(c, tc.lim)
			if d5list.ErrorCode(err) != d5list.ETOOLARGE || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want ETOOLARGE %q", err, tc.msg)
			}
			if c.n > tc.limit {
				t.Errorf("read %d of %d archive bytes before refusing; want at most %d", c.n, len(tc.data), tc.limit)
			}
			if rs := d5list.ErrorReasons(err); len(rs) == 0 || rs[0].Code != CodeTooLarge {
				t.Errorf("reasons %+v", rs)
			}
		})
	}
	// Open checks the archive size before reading a byte.
	_, err := Open(writeTemp(t, "b.tgz", bomb), Limits{MaxArchiveBytes: 1000})
	if d5list.ErrorCode(err) != d5list.ETOOLARGE {
		t.Errorf("Open archive size: %v", err)
	}
}

// TestReadMemoryIsBounded reads a bundle whose code/ holds 64 MiB of
// incompressible data and shows that the reader's memory does not grow
// with it: only the small required files are held.
func TestReadMemoryIsBounded(t *testing.T) {
	const size = 64 << 20
	p := filepath.Join(t.TempDir(), "big.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.NoCompression) // random data does not compress anyway
	tw := tar.NewWriter(zw)
	for _, e := range validEntries() {
		tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Size: int64(len(e.body)), Mode: 0o644})
		tw.Write([]byte(e.body))
	}
	tw.WriteHeader(&tar.Header{Name: "code/weights.bin", Typeflag: tar.TypeReg, Size: size, Mode: 0o644})
	rng := rand.New(rand.NewSource(500))
	chunk := make([]byte, 1<<20)
	for i := 0; i < size/len(chunk); i++ {
		rng.Read(chunk)
		tw.Write(chunk)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	f.Close()
	chunk = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := Open(p, Limits{MaxFileBytes: 128 << 20, MaxTotalBytes: 256 << 20})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	var got int64
	for _, fi := range b.Files {
		if fi.Name == "code/weights.bin" {
			got = fi.Size
		}
	}
	if got != size {
		t.Fatalf("code/weights.bin read as %d bytes, want %d", got, size)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("read %d MiB: allocated %d KiB in total, heap in use grew by %d KiB", size>>20, allocated>>10, grown>>10)
	if allocated > size/16 || grown > size/16 {
		t.Errorf("memory grows with the data: allocated %d bytes, heap grew %d bytes, for %d bytes of data", allocated, grown, size)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	writeFolder(t, dir, validEntries())
	writeFolder(t, dir, []ent{{name: ".git/HEAD", body: "ref"}, {name: "code/.git/config", body: "x"}})
	b, err := ReadDir(dir, DefaultLimits())
	if err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	if len(b.Files) != 7 || len(b.Results) != 2 {
		t.Errorf("files %+v", b.Files)
	}

	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "code", "passwd")); err != nil {
		t.Skip(err)
	}
	writeFolder(t, dir, []ent{{name: "notes.txt", body: "x"}})
	_, err = ReadDir(dir, DefaultLimits())
	checkRefusal(t, err, refusal{CodeUnsafeEntry, "code/passwd", "symbolic link", ""})
	checkRefusal(t, err, refusal{CodeUnknownFile, "notes.txt", "unknown top-level file", ""})
}

func TestPackRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeFolder(t, dir, validEntries())
	writeFolder(t, dir, []ent{{name: ".git/objects/x", body: "vcs"}, {name: "code/lib/util.py", body: "x = 1\n"}})
	var first, second bytes.Buffer
	if err := Pack(dir, &first); err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	// Same content, other times: the same bytes.
	now := packTime.AddDate(3, 0, 0)
	os.Chtimes(filepath.Join(dir, "recipe.yaml"), now, now)
	if err := Pack(dir, &second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("packing twice gave different bytes")
	}

	b, err := Open(writeTemp(t, "bundle.tar.gz", first.Bytes()), DefaultLimits())
	if err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	var names []string
	for _, f := range b.Files {
		names = append(names, f.Name)
	}
	want := "README.md code/lib/util.py code/run.sh recipe.yaml results/result_0.txt results/result_1.txt submission.json system.json"
	if strings.Join(names, " ") != want {
		t.Errorf("packed %v, want %s (sorted, .git left out)", names, want)
	}
	tr := tar.NewReader(mustGunzip(t, first.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		wantMode := int64(0o644)
		if h.Name == "code/run.sh" {
			wantMode = 0o755
		}
		if h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(packTime) {
			t.Errorf("%s: mode %o uid %d gid %d uname %q time %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
	}

	if err := os.Symlink("run.sh", filepath.Join(dir, "code", "link.sh")); err != nil {
		t.Skip(err)
	}
	err = Pack(dir, io.Discard)
	checkRefusal(t, err, refusal{CodeUnsafeEntry, "code/link.sh", "symbolic link", ""})
}

func mustGunzip(t *testing.T, data []byte) io.Reader {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

func TestExtract(t *testing.T) {
	wrapped := []ent{}
	for _, e := range validEntries() {
		e.name = "sub/" + e.name
		wrapped = append(wrapped, e)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := Extract(writeTemp(t, "b.tgz", tarGz(t, wrapped)), dir, DefaultLimits()); err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	st, err := os.Stat(filepath.Join(dir, "code", "run.sh"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("code/run.sh: %v %v", st, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "results", "result_1.txt"))
	if string(got) != runLog {
		t.Errorf("result_1.txt = %q", got)
	}
	if err := Extract(writeTemp(t, "b.tgz", tarGz(t, validEntries())), dir, DefaultLimits()); d5list.ErrorCode(err) != d5list.ECONFLICT {
		t.Errorf("extracting into a full folder: %v", err)
	}

	for _, tc := range badBundles() {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			out := filepath.Join(base, "a", "b")
			err := Extract(writeTemp(t, "b.tgz", tarGz(t, tc.ents)), out, DefaultLimits())
			checkRefusal(t, err, tc.want)
			if left := listTree(t, out); len(left) != 0 {
				t.Errorf("refused bundle left %v", left)
			}
			if left := listTree(t, base); strings.Join(left, " ") != "a a/b" {
				t.Errorf("files outside the target: %v", left)
			}
		})
	}
}

// An entry of an unknown type carries data in tar (devices and links do
// not); that data is read through the limits too.
func TestSpecialEntryDataIsMetered(t *testing.T) {
	bomb := zeroBomb(t, "code/dev", 64)
	// Give the entry an unknown type: type flag at 156,
	// checksum recomputed over the header block.
	zr, _ := gzip.NewReader(bytes.NewReader(bomb))
	zr.Multistream(false)
	hdr, _ := io.ReadAll(zr)
	hdr[156] = 'Z'
	copy(hdr[148:156], "        ")
	sum := 0
	for _, c := range hdr[:512] {
		sum += int(c)
	}
	copy(hdr[148:156], fmt.Sprintf("%06o\x00 ", sum))
	var first bytes.Buffer
	zw := gzip.NewWriter(&first)
	zw.Write(hdr)
	zw.Close()
	rest := bomb[bytes.Index(bomb[10:], []byte{0x1f, 0x8b})+10:]
	c := &consumed{r: io.MultiReader(&first, bytes.NewReader(rest))}
	_, err := Read(c, Limits{MaxFileBytes: 4 << 20, MaxCompression: 1e9})
	if d5list.ErrorCode(err) != d5list.ETOOLARGE || c.n > 32<<10 {
		t.Fatalf("unknown entry type with 64 MiB of data: %v after %d bytes", err, c.n)
	}
}
