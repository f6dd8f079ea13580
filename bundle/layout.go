package bundle

import (
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Top-level names of the d5list/v1 layout.
const (
	ManifestName = "submission.json"
	SystemName   = "system.json"
	ResultsDir   = "results"
	CodeDir      = "code"
)

// RecipeNames are the names a bundle's one recipe may have.
var RecipeNames = []string{"recipe.yaml", "recipe.yml", "recipe.json", "recipe.py"}

// vcsDirs are the only folders Pack and ReadDir leave out.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, "_darcs": true, ".jj": true}

var resultName = regexp.MustCompile(`^result_([0-9]+)\.txt$`)

// role is what a bundle file is for.
type role int

const (
	roleUnknown role = iota
	roleManifest
	roleRecipe
	roleSystem
	roleResult
	roleReadme
	roleCode
	roleBadResult
)

// held reports whether the file is parsed and so read into memory.
func (r role) held() bool {
	return r == roleManifest || r == roleRecipe || r == roleSystem || r == roleResult
}

// classify says what the regular file name (clean, slash-separated, wrapper
// folder stripped) is in the layout.
func classify(name string) role {
	top, rest, nested := strings.Cut(name, "/")
	if !nested {
		switch {
		case top == ManifestName:
			return roleManifest
		case top == SystemName:
			return roleSystem
		case isRecipeName(top):
			return roleRecipe
		case isReadme(top):
			return roleReadme
		}
		return roleUnknown
	}
	switch top {
	case CodeDir:
		return roleCode
	case ResultsDir:
		if resultName.MatchString(rest) {
			return roleResult
		}
		return roleBadResult
	}
	return roleUnknown
}

func isRecipeName(s string) bool {
	for _, n := range RecipeNames {
		if s == n {
			return true
		}
	}
	return false
}

func isReadme(s string) bool {
	return len(s) >= 6 && strings.EqualFold(s[:6], "readme")
}

// knownTop reports whether a top-level component belongs to the layout;
// anything else as the first component of the first entry is taken to be
// a folder wrapping the whole bundle.
func knownTop(s string) bool {
	return s == ManifestName || s == SystemName || s == ResultsDir || s == CodeDir || isRecipeName(s) || isReadme(s)
}

// resultIndex returns the <i> of results/result_<i>.txt.
func resultIndex(name string) (int, bool) {
	m := resultName.FindStringSubmatch(path.Base(name))
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	return i, true
}

// suggest returns a layout name close to the unknown top-level name s, for
// the typo hint in "unknown file sytem.json (did you mean system.json?)".
func suggest(s string) string {
	best, bestD := "", 3
	cands := append([]string{ManifestName, SystemName, ResultsDir, CodeDir, "README.md"}, RecipeNames...)
	ls := strings.ToLower(s)
	for _, c := range cands {
		if d := editDistance(ls, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// maxNameLen bounds entry names, so that the set of seen names stays small.
const maxNameLen = 1024

// cleanName checks an archive entry name and returns it cleaned (no "./",
// no doubled or trailing slash). It refuses anything that could land outside
// the extraction folder on any system.
func cleanName(raw string) (string, string) {
	switch {
	case raw == "":
		return "", "empty entry name"
	case len(raw) > maxNameLen:
		return "", "entry name longer than " + strconv.Itoa(maxNameLen) + " bytes"
	case strings.ContainsRune(raw, 0):
		return "", "NUL byte in entry name"
	case strings.Contains(raw, `\`):
		return "", `backslash in entry name (Windows separators could escape the folder)`
	case strings.HasPrefix(raw, "/"):
		return "", "absolute path"
	case len(raw) >= 2 && raw[1] == ':' && (raw[0]|0x20 >= 'a' && raw[0]|0x20 <= 'z'):
		return "", "absolute Windows path"
	}
	for _, c := range strings.Split(raw, "/") {
		if c == ".." {
			return "", `".." in entry name`
		}
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f {
			return "", "control character in entry name"
		}
	}
	clean := path.Clean(raw)
	if clean == "." {
		return "", "entry name is the archive root"
	}
	return clean, ""
}
