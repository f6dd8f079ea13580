package bundle

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	d5list "github.com/deep500/d5list"
)

// CodeMLPerfFolder is the Reason code of an uploaded MLPerf result folder
// that cannot be read.
const CodeMLPerfFolder = "mlperf_folder"

// The files of an MLPerf submission that MLPerf's checkers read. In one
// benchmark's result folder: the run logs (result_<i>.txt, numbered from
// 0 or 1, zero-padded or not), the system description, the review
// committee's RCP scaling and the package checker's bypass file. In a
// submission tree: systems/<system>.json, and under results/<system>/ the
// system's bypass file and each benchmark folder's files.
var (
	mlperfFolderFile = regexp.MustCompile(`^(result_[0-9]+\.txt|system\.json|scaling\.json|package_checker_params)$`)
	mlperfTreeFile   = regexp.MustCompile(`^(systems/[^/]+\.json|results/[^/]+/package_checker_params|results/[^/]+/[^/]+/(result_[^/]*\.txt|scaling\.json|package_checker_params))$`)
)

// maxIgnoredNames bounds the names an upload's answer lists as ignored: a
// submission tree's archive may hold thousands of source files.
const maxIgnoredNames = 50

// ExtractMLPerf unpacks an uploaded MLPerf submission (a .tar.gz or a
// .zip) into dir, which must be empty or absent: one benchmark's result
// folder (result_*.txt and the rest, flat or in one folder), or a
// submission tree (systems/ and results/, at the top or in one folder).
// Only the files MLPerf's checkers read are written; the names of the
// others come back in ignored (the first 50, then a count). root is
// where the submission lies: dir, or the folder inside it that the
// archive wraps it in, whose name the checks read the round from. Every
// file goes through os.Root and the limits of lim; links, devices and
// names that could leave dir are refused, and a refused archive leaves
// dir empty.
func ExtractMLPerf(r io.Reader, dir string, lim Limits) (root string, ignored []string, err error) {
	lim = lim.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, d5list.Errorf(d5list.EINTERNAL, "creating %s: %v", dir, err)
	}
	rt, err := os.OpenRoot(dir)
	if err != nil {
		return "", nil, err
	}
	defer rt.Close()
	x := &mlperfExtract{root: rt, lim: lim, seen: map[string]bool{}}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
			_ = os.MkdirAll(dir, 0o755)
		}
	}()
	br := bufio.NewReader(io.LimitReader(r, lim.MaxArchiveBytes+1))
	magic, _ := br.Peek(4)
	switch {
	case isGzip(magic):
		err = x.tarGz(br)
	case isZip(magic):
		err = x.zip(br)
	default:
		err = d5list.Errorf(d5list.EINVALID, "the upload is neither a .tar.gz nor a .zip")
	}
	if err == nil && len(x.seen) == 0 {
		err = d5list.Errorf(d5list.EINVALID, "the archive holds no result_<i>.txt, system.json or scaling.json, nor a submission tree's systems/ and results/")
	}
	if x.dropped > 0 {
		x.ignored = append(x.ignored, fmt.Sprintf("(and %d more)", x.dropped))
	}
	return filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(x.wrapper, "/"))), x.ignored, err
}

type mlperfExtract struct {
	root    *os.Root
	lim     Limits
	seen    map[string]bool
	ignored []string
	dropped int
	files   int
	total   int64
	// wrapper is the folder the submission sits in ("" at the top),
	// decided by the first of its files.
	wrapper string
	decided bool
}

// submissionRoot is the folder a file of a submission lies in, as its
// archive packs it (training_results_v5.0/AMD/ of
// training_results_v5.0/AMD/systems/x.json, or ssd/ of ssd/result_0.txt):
// the shortest prefix that leaves a submission tree's file, else one
// benchmark folder's; ok is false for a file of neither.
func submissionRoot(name string) (root string, ok bool) {
	for _, pattern := range []*regexp.Regexp{mlperfTreeFile, mlperfFolderFile} {
		for i := 0; i <= len(name); i++ {
			if (i == 0 || name[i-1] == '/') && pattern.MatchString(name[i:]) {
				return name[:i], true
			}
		}
	}
	return "", false
}

func (x *mlperfExtract) refuse(name, format string, args ...any) error {
	e := d5list.Errorf(d5list.EINVALID, "%s: %s", name, fmt.Sprintf(format, args...))
	e.Reasons = []d5list.Reason{{Code: CodeMLPerfFolder, File: name, Message: fmt.Sprintf(format, args...)}}
	return e
}

func (x *mlperfExtract) ignore(name string) {
	if len(x.ignored) < maxIgnoredNames {
		x.ignored = append(x.ignored, name)
	} else {
		x.dropped++
	}
}

// entry writes one archive member, or ignores it.
func (x *mlperfExtract) entry(raw string, regular bool, size int64, body io.Reader) error {
	x.files++
	if x.files > x.lim.MaxFiles {
		return d5list.Errorf(d5list.ETOOLARGE, "more than %d entries in the archive; pack only systems/ and results/", x.lim.MaxFiles)
	}
	name, why := cleanName(strings.TrimPrefix(raw, "./"))
	if why != "" {
		return x.refuse(raw, "%s", why)
	}
	if !regular {
		return nil // folders are implied; links and devices are never written
	}
	if !x.decided {
		x.wrapper, x.decided = submissionRoot(name)
	}
	rel, inside := strings.CutPrefix(name, x.wrapper)
	if !x.decided || !inside || !mlperfFolderFile.MatchString(rel) && !mlperfTreeFile.MatchString(rel) {
		x.ignore(name)
		return nil
	}
	if x.seen[rel] {
		return x.refuse(raw, "%s given twice", rel)
	}
	if size > x.lim.MaxFileBytes {
		return d5list.Errorf(d5list.ETOOLARGE, "%s is %d bytes; the limit is %d", raw, size, x.lim.MaxFileBytes)
	}
	if d := path.Dir(name); d != "." {
		if err := x.root.MkdirAll(d, 0o755); err != nil {
			return x.refuse(raw, "creating its folder: %v", err)
		}
	}
	f, err := x.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return x.refuse(raw, "%v", err)
	}
	x.seen[rel] = true
	n, err := io.Copy(f, io.LimitReader(body, x.lim.MaxFileBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return x.refuse(raw, "reading: %v", err)
	}
	x.total += n
	switch {
	case n > x.lim.MaxFileBytes:
		return d5list.Errorf(d5list.ETOOLARGE, "%s is more than %d bytes", raw, x.lim.MaxFileBytes)
	case x.total > x.lim.MaxTotalBytes:
		return d5list.Errorf(d5list.ETOOLARGE, "the files are more than %d bytes together", x.lim.MaxTotalBytes)
	}
	return nil
}

func (x *mlperfExtract) tarGz(r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return d5list.Errorf(d5list.EINVALID, "the .tar.gz cannot be read: %v", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return d5list.Errorf(d5list.EINVALID, "the .tar.gz cannot be read: %v", err)
		}
		regular := h.Typeflag == tar.TypeReg
		if !regular && h.Typeflag != tar.TypeDir {
			return x.refuse(h.Name, "refused: not a regular file or a folder")
		}
		if err := x.entry(h.Name, regular, h.Size, tr); err != nil {
			return err
		}
	}
}

// zip spools the archive to a temporary file (a zip is read from its end)
// within MaxArchiveBytes, then reads each member within the compression
// ratio that stops a zip bomb.
func (x *mlperfExtract) zip(r io.Reader) error {
	tmp, err := os.CreateTemp("", "d5list-mlperf-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, r)
	if err != nil {
		return err
	}
	if n > x.lim.MaxArchiveBytes {
		return d5list.Errorf(d5list.ETOOLARGE, "the archive is more than %d bytes", x.lim.MaxArchiveBytes)
	}
	switch count, ok := zipEntryCount(tmp, n, x.lim.MaxFiles); {
	case !ok:
		return d5list.Errorf(d5list.EINVALID, "the .zip's central directory cannot be read")
	case count > x.lim.MaxFiles:
		return d5list.Errorf(d5list.ETOOLARGE, "the .zip lists more than %d entries", x.lim.MaxFiles)
	}
	zr, err := zip.NewReader(tmp, n)
	if err != nil {
		return d5list.Errorf(d5list.EINVALID, "the .zip cannot be read: %v", err)
	}
	for _, f := range zr.File {
		mode := f.Mode()
		regular := mode.IsRegular()
		if !regular && !mode.IsDir() {
			return x.refuse(f.Name, "refused: not a regular file or a folder")
		}
		if regular && f.CompressedSize64 > 0 && float64(f.UncompressedSize64)/float64(f.CompressedSize64) > x.lim.MaxCompression {
			return d5list.Errorf(d5list.ETOOLARGE, "%s expands more than %.0f times", f.Name, x.lim.MaxCompression)
		}
		var body io.Reader
		if regular {
			rc, err := f.Open()
			if err != nil {
				return x.refuse(f.Name, "%v", err)
			}
			defer rc.Close()
			body = rc
		}
		if err := x.entry(f.Name, regular, int64(min(f.UncompressedSize64, 1<<62)), body); err != nil {
			return err
		}
	}
	return nil
}
