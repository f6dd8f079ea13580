// Package bundle reads and writes d5list submission bundles (see
// docs/bundle-format.md): a tar.gz or zip archive, or a folder, holding
// submission.json, a recipe, system.json and results/result_<i>.txt.
package bundle

import d5list "github.com/deep500/d5list"

// Bundle is the parsed content of a submission bundle. Only the small,
// required files are held in memory; everything else is only listed.
type Bundle struct {
	Manifest     d5list.Manifest
	ManifestFile string // path inside the bundle, e.g. "submission.json"
	Recipe       d5list.Recipe
	RecipeFile   string // "recipe.yaml", "recipe.json" or "recipe.py"
	System       System
	SystemFile   string
	Results      []ResultFile // sorted by Index
	Files        []FileInfo   // every regular file in the bundle, in archive order
	// ContentSHA256 identifies the files themselves, not their archive
	// (contentSum): a bundle packed again from the same folder has the same.
	ContentSHA256 string
}

// ResultFile is one run's MLLOG.
type ResultFile struct {
	Index int    // the <i> of result_<i>.txt
	Name  string // path inside the bundle, e.g. "results/result_0.txt"
	Data  []byte
}

// FileInfo names one file of the bundle.
type FileInfo struct {
	Name string
	Size int64
}

// Limits bound what a bundle may hold, so that reading one never needs more
// than a fixed amount of memory or disk.
type Limits struct {
	MaxFileBytes    int64   // one file, uncompressed
	MaxTotalBytes   int64   // all files, uncompressed
	MaxFiles        int     // number of entries
	MaxResultBytes  int64   // one result log (held in memory)
	MaxCompression  float64 // uncompressed/compressed ratio (zip bombs)
	MaxArchiveBytes int64   // the archive itself
	// MaxHeldBytes bounds the files held in memory together (the result
	// logs, the recipe, submission.json and system.json): an honest bundle
	// holds a few megabytes, MLPerf's largest published folder 6 MB.
	MaxHeldBytes int64
	// MaxRecipeBytes bounds the recipe; published ones are 2 kB.
	MaxRecipeBytes int64
}

// DefaultLimits are the limits the portal applies to uploads.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:    256 << 20,
		MaxTotalBytes:   1 << 30,
		MaxFiles:        2000,
		MaxResultBytes:  16 << 20,
		MaxCompression:  100,
		MaxArchiveBytes: 1 << 30,
		MaxHeldBytes:    64 << 20,
		MaxRecipeBytes:  256 << 10,
	}
}

// CheckMemory is the most memory that reading and checking an upload of
// size bytes takes, for a portal to admit uploads by (size < 0: not
// known). However it is built, an upload holds at most MaxHeldBytes of
// files in memory, and at most MaxCompression times its size; read and
// parsed they take up to 2.75 times that (the MLLOG reader's bounds keep
// it so), and a recipe.py at its limit and the readers' buffers 32 MiB
// beside. BENCHMARKS.md ("Upload check memory") has the measurements, and
// TestUploadMemoryStudy holds each of them to this.
func (l Limits) CheckMemory(size int64) int64 {
	l = l.withDefaults()
	held := l.MaxHeldBytes
	if size >= 0 {
		held = min(held, int64(float64(size)*l.MaxCompression))
	}
	return 32<<20 + held*11/4
}

// withDefaults fills zero limits from DefaultLimits, so that a zero Limits
// value never means "unbounded".
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = d.MaxResultBytes
	}
	if l.MaxCompression <= 0 {
		l.MaxCompression = d.MaxCompression
	}
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = d.MaxArchiveBytes
	}
	if l.MaxHeldBytes <= 0 {
		l.MaxHeldBytes = d.MaxHeldBytes
	}
	if l.MaxRecipeBytes <= 0 {
		l.MaxRecipeBytes = d.MaxRecipeBytes
	}
	return l
}
