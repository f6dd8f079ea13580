package bundle

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
	"strings"
)

// ratioGrace is how many uncompressed bytes may be read before the
// compression ratio is checked: a small archive of text compresses far
// better than any sane limit, and is harmless.
const ratioGrace = 1 << 20

type entryKind int

const (
	kindFile entryKind = iota
	kindDir
	kindSymlink
	kindHardlink
	kindOther
)

func (k entryKind) String() string {
	switch k {
	case kindSymlink:
		return "a symbolic link"
	case kindHardlink:
		return "a hard link"
	case kindOther:
		return "not a regular file or folder (device, FIFO or other special entry)"
	}
	return "a file"
}

// sink receives the accepted regular files of a bundle (Extract writes
// them to disk). data is set for held files, which are already read.
type sink interface {
	file(name string, exec bool, data []byte, body io.Reader) error
}

// loader walks the entries of one bundle, applies every archive and layout
// check and keeps only the small required files in memory.
type loader struct {
	lim Limits
	rs  reasons
	// compressed returns the archive bytes consumed so far; nil for folders.
	compressed func() int64
	sink       sink

	entries int
	total   int64
	seen    map[string]bool // explicit entries, cleaned
	isDir   map[string]bool // every path seen, true for folders
	wrapper string          // "name/" of a folder wrapping everything, or ""
	decided bool
	badTops map[string]bool

	b       Bundle
	recipes []string
	held    map[string][]byte
	// heldBytes counts the bytes of the files held in memory.
	heldBytes int64
	stopped   bool
	// sums are the sha256 of each accepted file, by its name in the bundle.
	sums map[string][]byte
}

// errLimit stops the walk: limits are not collected but end the reading,
// since going on is what they exist to prevent.
type errLimit struct{ msg string }

func (e *errLimit) Error() string { return e.msg }

func newLoader(lim Limits) *loader {
	return &loader{
		lim:     lim.withDefaults(),
		seen:    map[string]bool{},
		isDir:   map[string]bool{},
		badTops: map[string]bool{},
		held:    map[string][]byte{},
		sums:    map[string][]byte{},
	}
}

func (l *loader) tooLarge(file string, format string, args ...any) {
	l.rs.add(CodeTooLarge, file, 0, format, args...)
	l.stopped = true
}

// visit handles one entry. body is read only for regular files. It returns
// false when reading must stop.
func (l *loader) visit(raw string, kind entryKind, exec bool, body io.Reader) bool {
	l.entries++
	if l.entries > l.lim.MaxFiles {
		l.tooLarge(raw, "more than %d entries in the bundle", l.lim.MaxFiles)
		return false
	}
	if kind != kindFile && body != nil {
		// A link or device may carry data too; it is read through the
		// limits like any file, so that it cannot hide a bomb.
		if _, err := io.Copy(io.Discard, &meter{r: body, l: l, name: raw}); err != nil {
			l.readErr(raw, err)
			return false
		}
	}
	if kind == kindDir && (raw == "." || raw == "./") {
		return true // tar -C dir . starts with the folder itself
	}
	name, why := cleanName(raw)
	if why != "" {
		l.rs.add(CodeUnsafePath, raw, 0, "%s", why)
		return true
	}
	if kind != kindFile && kind != kindDir {
		l.rs.add(CodeUnsafeEntry, raw, 0, "refused: the entry is %s", kind)
		return true
	}
	if l.seen[name] {
		if kind == kindFile || !l.isDir[name] {
			l.rs.add(CodeDuplicate, raw, 0, "duplicate entry %s", name)
			return true
		}
		return true // the same folder listed twice is harmless
	}
	l.seen[name] = true
	if !l.checkTree(raw, name, kind == kindDir) {
		return true
	}

	if !l.decided {
		l.decided = true
		top, _, nested := strings.Cut(name, "/")
		if (nested || kind == kindDir) && !knownTop(top) {
			l.wrapper = top + "/"
		}
	}
	rel := name
	if l.wrapper != "" {
		if name+"/" == l.wrapper {
			return true
		}
		var ok bool
		if rel, ok = strings.CutPrefix(name, l.wrapper); !ok {
			l.rs.add(CodeUnknownFile, raw, 0, "entry outside the folder %s that wraps the bundle (a bundle is flat or wrapped in exactly one folder)", l.wrapper)
			return true
		}
	}
	if kind == kindDir {
		l.checkDir(raw, rel)
		return true
	}
	return l.file(raw, rel, exec, body)
}

// checkTree refuses a file and a folder of the same name, which no file
// system can extract.
func (l *loader) checkTree(raw, name string, dir bool) bool {
	if d, ok := l.isDir[name]; ok && (!d || !dir) {
		l.rs.add(CodeDuplicate, raw, 0, "%s is both a file and a folder", name)
		return false
	}
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if d, ok := l.isDir[p]; ok {
			if !d {
				l.rs.add(CodeDuplicate, raw, 0, "%s is inside %s, which is a file", name, p)
				return false
			}
			break // its parents were marked when p was
		}
		l.isDir[p] = true
	}
	l.isDir[name] = dir
	return true
}

func (l *loader) checkDir(raw, rel string) {
	top, rest, nested := strings.Cut(rel, "/")
	switch {
	case top == CodeDir:
	case top == ResultsDir && !nested:
	case top == ResultsDir:
		l.rs.add(CodeResultName, raw, 0, "folder %s/ in results/: results/ holds only result_<i>.txt files", rest)
	default:
		l.unknownTop(raw, top, true)
	}
}

func (l *loader) unknownTop(raw, top string, dir bool) {
	if l.badTops[top] {
		return
	}
	l.badTops[top] = true
	what := "file"
	if dir {
		what = "folder"
	}
	msg := fmt.Sprintf("unknown top-level %s %s; a d5list/v1 bundle holds submission.json, one recipe.(yaml|yml|json|py), system.json, results/, code/ and README*", what, top)
	if s := suggest(top); s != "" {
		msg = fmt.Sprintf("unknown top-level %s %s (did you mean %s?)", what, top, s)
	}
	l.rs.add(CodeUnknownFile, raw, 0, "%s", msg)
}

// file reads one regular file through the limits.
func (l *loader) file(raw, rel string, exec bool, body io.Reader) bool {
	r := classify(rel)
	switch r {
	case roleUnknown:
		top, _, nested := strings.Cut(rel, "/")
		l.unknownTop(raw, top, nested)
	case roleBadResult:
		l.rs.add(CodeResultName, raw, 0, "results/ holds only files named result_<i>.txt (i a number), one MLLOG per run")
	case roleRecipe:
		l.recipes = append(l.recipes, rel)
	}
	m := &meter{r: body, l: l, name: raw, sum: sha256.New()}
	var data []byte
	var err error
	if r.held() {
		max := l.lim.MaxResultBytes
		if r == roleRecipe {
			max = min(max, l.lim.MaxRecipeBytes)
		}
		data, err = io.ReadAll(io.LimitReader(m, max+1))
		if err == nil && int64(len(data)) > max {
			l.tooLarge(raw, "%s is larger than %d bytes", rel, max)
			return false
		}
		if l.heldBytes += int64(len(data)); l.heldBytes > l.lim.MaxHeldBytes {
			l.tooLarge(raw, "the result logs, recipe and descriptions are more than %d bytes together", l.lim.MaxHeldBytes)
			return false
		}
		if err == nil && l.sink != nil {
			err = l.sink.file(rel, exec, data, nil)
		}
	} else if l.sink != nil && r != roleUnknown && r != roleBadResult {
		err = l.sink.file(rel, exec, nil, m)
	} else {
		_, err = io.Copy(io.Discard, m)
	}
	if err != nil {
		l.readErr(raw, err)
		return false
	}
	l.b.Files = append(l.b.Files, FileInfo{Name: rel, Size: m.n})
	l.sums[rel] = m.sum.Sum(nil)
	if r.held() {
		if r == roleResult {
			i, ok := resultIndex(rel)
			if !ok {
				l.rs.add(CodeResultName, raw, 0, "result index out of range")
				return true
			}
			l.b.Results = append(l.b.Results, ResultFile{Index: i, Name: rel, Data: data})
		} else {
			l.held[rel] = data
		}
	}
	return true
}

func (l *loader) readErr(raw string, err error) {
	var le *errLimit
	if errors.As(err, &le) {
		l.tooLarge(raw, "%s", le.msg)
		return
	}
	l.rs.add(CodeCorrupt, raw, 0, "reading the entry: %v", err)
	l.stopped = true
}

// meter counts the bytes actually read from one entry (headers are not
// trusted) and enforces the file, total and compression limits as it goes.
type meter struct {
	r    io.Reader
	l    *loader
	name string
	n    int64
	// sum, when set, hashes the bytes read.
	sum hash.Hash
}

func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.n += int64(n)
	if m.sum != nil {
		m.sum.Write(p[:n])
	}
	l := m.l
	l.total += int64(n)
	switch {
	case m.n > l.lim.MaxFileBytes:
		return n, &errLimit{fmt.Sprintf("file larger than %d bytes", l.lim.MaxFileBytes)}
	case l.total > l.lim.MaxTotalBytes:
		return n, &errLimit{fmt.Sprintf("bundle larger than %d bytes uncompressed", l.lim.MaxTotalBytes)}
	case l.compressed != nil && l.total > ratioGrace:
		if c := max(l.compressed(), 1); float64(l.total) > l.lim.MaxCompression*float64(c) {
			return n, &errLimit{fmt.Sprintf("compression ratio above %g (%d bytes from %d compressed): refused as a possible archive bomb", l.lim.MaxCompression, l.total, c)}
		}
	}
	return n, err
}

// finish parses the held files and checks the layout as a whole.
func (l *loader) finish() (*Bundle, error) {
	if l.stopped {
		return nil, l.rs.err("bundle refused")
	}
	b := &l.b
	if data, ok := l.held[ManifestName]; ok {
		b.ManifestFile = ManifestName
		m, err := ParseManifest(ManifestName, data)
		l.rs.merge(err, CodeManifest, ManifestName)
		b.Manifest = m
	} else {
		l.rs.add(CodeMissingFile, ManifestName, 0, "missing submission.json (the cover sheet: format, benchmark, division, ...)")
	}
	switch len(l.recipes) {
	case 0:
		l.rs.add(CodeMissingFile, "recipe.yaml", 0, "missing recipe: one of %s", strings.Join(RecipeNames, ", "))
	case 1:
		b.RecipeFile = l.recipes[0]
		r, err := ParseRecipe(b.RecipeFile, l.held[b.RecipeFile])
		l.rs.merge(err, CodeRecipe, b.RecipeFile)
		b.Recipe = r
	default:
		l.rs.add(CodeDuplicate, l.recipes[1], 0, "more than one recipe (%s): a bundle has exactly one", strings.Join(l.recipes, ", "))
	}
	if data, ok := l.held[SystemName]; ok {
		b.SystemFile = SystemName
		s, err := ParseSystem(SystemName, data)
		l.rs.merge(err, CodeSystem, SystemName)
		b.System = s
	} else {
		l.rs.add(CodeMissingFile, SystemName, 0, "missing system.json (MLPerf-style system description)")
	}
	if len(b.Results) == 0 {
		l.rs.add(CodeMissingFile, "results/result_0.txt", 0, "no results: results/result_<i>.txt, one MLLOG per run, are required")
	}
	sort.SliceStable(b.Results, func(i, j int) bool { return b.Results[i].Index < b.Results[j].Index })
	for i := 1; i < len(b.Results); i++ {
		if b.Results[i].Index == b.Results[i-1].Index {
			l.rs.add(CodeDuplicate, b.Results[i].Name, 0, "run index %d used twice (also %s)", b.Results[i].Index, b.Results[i-1].Name)
		}
	}
	if err := l.rs.err("bundle refused"); err != nil {
		return nil, err
	}
	b.ContentSHA256 = contentSum(l.sums)
	return b, nil
}

// contentSum is the sha256 of a bundle's files, whatever archive holds
// them: each file's name inside the bundle and the sha256 of its bytes,
// one line per file in name order. Two bundles with the same files have
// the same sum, packed as tar.gz or zip, wrapped in a folder or not, with
// any dates and modes.
func contentSum(sums map[string][]byte) string {
	names := make([]string, 0, len(sums))
	for name := range sums {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%x\n", name, sums[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Open reads the bundle archive at path: a tar.gz or a zip, told apart by
// their first bytes, not by the file name.
func Open(path string, lim Limits) (*Bundle, error) {
	l := newLoader(lim)
	if err := l.readFile(path); err != nil {
		return nil, err
	}
	return l.finish()
}

// Read reads a tar.gz bundle from a stream, such as an upload being
// received. Zip archives keep their directory at the end and need Open.
func Read(r io.Reader, lim Limits) (*Bundle, error) {
	l := newLoader(lim)
	cr := &countingReader{r: r, max: l.lim.MaxArchiveBytes}
	br := bufio.NewReader(cr)
	magic, _ := br.Peek(4)
	switch {
	case isGzip(magic):
		l.readTarGz(br, cr)
	case isZip(magic):
		return nil, invalid(CodeNotArchive, "", 0, "a zip bundle cannot be read as a stream; save it to a file and use Open (or send a .tar.gz)")
	default:
		return nil, invalid(CodeNotArchive, "", 0, "not a tar.gz bundle (the stream does not start with the gzip magic bytes)")
	}
	return l.finish()
}

// Streamable reports whether an archive that begins with prefix (its
// first four bytes) can be read as a stream with Read: a tar.gz can; a
// zip, which keeps its directory at its end, needs Open.
func Streamable(prefix []byte) bool { return isGzip(prefix) }
