package bundle

import (
	"fmt"
	"math"
	"path"
	"strings"
	"unicode"

	d5list "github.com/deep500/d5list"
	"github.com/google/go-containerregistry/pkg/name"
)

// maxDepth bounds nesting in recipes, so that hostile input cannot exhaust
// the stack; maxNodes bounds YAML alias expansion.
const (
	maxDepth = 64
	maxNodes = 100000
)

type nodeKind int

const (
	nScalar nodeKind = iota
	nList
	nMap
	nSymbol
)

// node is a recipe value as written, with its line, before normalisation.
// The three recipe syntaxes produce nodes, and one function turns nodes
// into Go values, so that YAML, JSON and Python give identical values.
type node struct {
	kind   nodeKind
	line   int
	scalar any // string, int64, float64, bool or nil
	items  []*node
	keys   []string
	vals   []*node
	name   string // symbol
	call   bool
}

func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) describe() string {
	switch n.kind {
	case nList:
		return "a list"
	case nMap:
		return "a mapping"
	case nSymbol:
		return "a code reference (" + n.name + ")"
	}
	switch n.scalar.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// recipeParse carries the file name and the collected reasons.
type recipeParse struct {
	file string
	rs   reasons
}

func (p *recipeParse) errorf(line int, format string, args ...any) {
	p.rs.add(CodeRecipe, p.file, line, format, args...)
}

// value normalises a node: integers int64, floats float64, lists and
// tuples []any, mappings map[string]any, {symbol: ...} mappings and Python
// names and calls d5list.Symbol.
func (p *recipeParse) value(n *node, field string) any {
	switch n.kind {
	case nScalar:
		return n.scalar
	case nList:
		out := make([]any, len(n.items))
		for i, it := range n.items {
			out[i] = p.value(it, fmt.Sprintf("%s[%d]", field, i))
		}
		return out
	case nSymbol:
		return p.symbol(n.name, n.call, n.items, n.keys, n.vals, field)
	}
	if n.get("symbol") != nil {
		return p.symbolMap(n, field)
	}
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		out[k] = p.value(n.vals[i], field+"."+k)
	}
	return out
}

func (p *recipeParse) symbol(name string, call bool, args []*node, keys []string, vals []*node, field string) d5list.Symbol {
	s := d5list.Symbol{Name: name, Call: call}
	for i, a := range args {
		s.Args = append(s.Args, p.value(a, fmt.Sprintf("%s(%d)", field, i)))
	}
	if len(keys) > 0 {
		s.Kwargs = make(map[string]any, len(keys))
		for i, k := range keys {
			s.Kwargs[k] = p.value(vals[i], field+"."+k)
		}
	}
	return s
}

// symbolMap reads the YAML/JSON spelling of a code reference:
// {symbol: NAME, call?: bool, args?: [...], kwargs?: {...}}.
func (p *recipeParse) symbolMap(n *node, field string) any {
	var name string
	call, callSet := false, false
	var args *node
	var kw *node
	ok := true
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "symbol":
			s, isStr := v.scalar.(string)
			if v.kind != nScalar || !isStr || !validDotted(s) {
				p.errorf(v.line, "%s.symbol must be a dotted name such as d5.ShuffleSampler", field)
				ok = false
			}
			name = s
		case "call":
			b, isBool := v.scalar.(bool)
			if v.kind != nScalar || !isBool {
				p.errorf(v.line, "%s.call must be true or false", field)
				ok = false
			}
			call, callSet = b, true
		case "args":
			if v.kind != nList {
				p.errorf(v.line, "%s.args must be a list", field)
				ok = false
			}
			args = v
		case "kwargs":
			if v.kind != nMap || v.get("symbol") != nil {
				p.errorf(v.line, "%s.kwargs must be a mapping", field)
				ok = false
			}
			kw = v
		default:
			p.errorf(v.line, "%s: unknown key %q in a code reference {symbol, call, args, kwargs}", field, k)
			ok = false
		}
	}
	if !ok {
		return nil
	}
	hasArgs := (args != nil && len(args.items) > 0) || (kw != nil && len(kw.keys) > 0)
	if hasArgs {
		if callSet && !call {
			p.errorf(n.line, "%s: a code reference with args or kwargs is a call; drop call: false", field)
			return nil
		}
		call = true
	}
	var items []*node
	if args != nil {
		items = args.items
	}
	var keys []string
	var vals []*node
	if kw != nil {
		keys, vals = kw.keys, kw.vals
	}
	return p.symbol(name, call, items, keys, vals, field)
}

func validDotted(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !validIdent(part) {
			return false
		}
	}
	return true
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r < 128 && unicode.IsLetter(r) || i > 0 && r < 128 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// section is one top-level part of a recipe as found in the file.
type section struct {
	n    *node
	line int
}

// buildRoot builds the recipe of a YAML or JSON document whose root is
// root; mapping names what the format calls a map, for the error.
func (p *recipeParse) buildRoot(root *node, mapping string) d5list.Recipe {
	if root.kind != nMap {
		p.errorf(root.line, "a recipe is %s with fixed, mutable and metrics, not %s", mapping, root.describe())
		return d5list.Recipe{}
	}
	secs := map[string]section{}
	for i, k := range root.keys {
		if !recipeKeys[k] {
			p.errorf(root.vals[i].line, "unknown key %q (keys: fixed, mutable, metrics, entrypoint)", k)
			continue
		}
		secs[k] = section{n: root.vals[i], line: root.vals[i].line}
	}
	return p.build(secs, func(s string) string { return s }, 0)
}

// build assembles a Recipe from the top-level sections; spell names them
// as the file does (FIXED in Python, fixed in YAML).
func (p *recipeParse) build(secs map[string]section, spell func(string) string, fileLine int) d5list.Recipe {
	var r d5list.Recipe
	for _, key := range []string{"fixed", "mutable"} {
		s, ok := secs[key]
		if !ok {
			p.errorf(fileLine, "missing %s (a mapping of component name to value)", spell(key))
			continue
		}
		if s.n == nil {
			continue // its assignment was refused already
		}
		if s.n.kind != nMap || s.n.get("symbol") != nil {
			p.errorf(s.line, "%s must be a mapping, not %s", spell(key), s.n.describe())
			continue
		}
		m, _ := p.value(s.n, spell(key)).(map[string]any)
		if key == "fixed" {
			r.Fixed = m
		} else {
			r.Mutable = m
		}
	}
	if s, ok := secs["metrics"]; !ok {
		p.errorf(fileLine, "missing %s (a list of acceptable metrics)", spell("metrics"))
	} else if s.n == nil {
	} else if s.n.kind != nList {
		p.errorf(s.line, "%s must be a list, not %s", spell("metrics"), s.n.describe())
	} else {
		r.Metrics = []d5list.MetricSpec{}
		for i, it := range s.n.items {
			if m, ok := p.metric(it, fmt.Sprintf("%s[%d]", spell("metrics"), i)); ok {
				r.Metrics = append(r.Metrics, m)
			}
		}
	}
	r.Entrypoint = p.bundlePath(secs, spell, "entrypoint", "a bundle-relative program such as code/run.sh")
	r.Image = p.image(secs, spell)
	return r
}

// image reads the image section: a registry reference pinned by digest,
// checked as registries' own tools parse one, or an archive in the bundle.
func (p *recipeParse) image(secs map[string]section, spell func(string) string) string {
	const example = "an image archive in the bundle such as code/image.tar, or a registry image pinned by digest such as ghcr.io/team/trainer@sha256:<64 hex digits>"
	s, ok := secs["image"]
	if !ok || s.n == nil {
		return ""
	}
	str, isStr := s.n.scalar.(string)
	switch {
	case s.n.kind != nScalar || !isStr:
		p.errorf(s.line, "%s must be a string (%s)", spell("image"), example)
	case d5list.IsRegistryImage(str):
		if _, err := name.NewDigest(str, name.StrictValidation); err != nil {
			p.errorf(s.line, "%s %q is not a registry image reference: %v (%s)", spell("image"), str, err, example)
			return ""
		}
		return str
	case strings.Contains(str, ":"):
		p.errorf(s.line, "%s %q: a registry image must be pinned by digest (NAME@sha256:...; `docker inspect --format '{{index .RepoDigests 0}}' IMAGE` prints it), since a tag can move between the claim and the re-run", spell("image"), str)
	default:
		return p.bundlePath(secs, spell, "image", example)
	}
	return ""
}

// bundlePath reads section key, a path inside the bundle: a string, clean
// and relative.
func (p *recipeParse) bundlePath(secs map[string]section, spell func(string) string, key, example string) string {
	s, ok := secs[key]
	if !ok || s.n == nil {
		return ""
	}
	str, isStr := s.n.scalar.(string)
	switch {
	case s.n.kind != nScalar || !isStr:
		p.errorf(s.line, "%s must be a string (%s)", spell(key), example)
	case str != "" && (path.IsAbs(str) || strings.Contains(str, `\`) || path.Clean(str) != str || strings.HasPrefix(str, "../") || str == ".."):
		p.errorf(s.line, "%s %q must be a clean bundle-relative path: %s", spell(key), str, example)
	default:
		return str
	}
	return ""
}

// metric reads one acceptable metric: the YAML/JSON mapping
// {name, acceptable, direction?, args?} or the Deep500 pair
// (d5.TestAccuracy(max_acc=True), 93.0), in any of the three syntaxes.
func (p *recipeParse) metric(n *node, field string) (d5list.MetricSpec, bool) {
	var m d5list.MetricSpec
	var acc *node
	switch {
	case n.kind == nList && len(n.items) == 2:
		what := n.items[0]
		acc = n.items[1]
		var sym any = nil
		switch {
		case what.kind == nSymbol || what.kind == nMap && what.get("symbol") != nil:
			sym = p.value(what, field)
		case what.kind == nScalar:
			if s, ok := what.scalar.(string); ok && s != "" {
				m.Name = s
			}
		}
		if s, ok := sym.(d5list.Symbol); ok {
			if len(s.Args) > 0 {
				p.errorf(what.line, "%s: positional arguments of a metric cannot be checked; use keyword arguments", field)
				return m, false
			}
			m.Name = MetricName(s.Name)
			m.Args = s.Kwargs
		}
		if m.Name == "" {
			p.errorf(what.line, "%s: the metric must be a Deep500 metric such as d5.TestAccuracy() or a name, not %s", field, what.describe())
			return m, false
		}
	case n.kind == nMap && n.get("symbol") == nil:
		ok := true
		for i, k := range n.keys {
			v := n.vals[i]
			switch k {
			case "name":
				s, isStr := v.scalar.(string)
				if v.kind != nScalar || !isStr || s == "" {
					p.errorf(v.line, "%s.name must be a non-empty string", field)
					ok = false
				}
				m.Name = s
			case "acceptable":
				acc = v
			case "direction":
				s, _ := v.scalar.(string)
				switch {
				case v.kind == nScalar && v.scalar == nil, s == "":
				case s == string(d5list.HigherIsBetter), s == string(d5list.LowerIsBetter):
					m.Direction = d5list.Direction(s)
				default:
					p.errorf(v.line, "%s.direction must be %q or %q", field, d5list.HigherIsBetter, d5list.LowerIsBetter)
					ok = false
				}
			case "args":
				if v.kind == nScalar && v.scalar == nil {
					break
				}
				if v.kind != nMap || v.get("symbol") != nil {
					p.errorf(v.line, "%s.args must be a mapping", field)
					ok = false
					break
				}
				if len(v.keys) > 0 {
					m.Args, _ = p.value(v, field+".args").(map[string]any)
				}
			default:
				p.errorf(v.line, "%s: unknown key %q (keys: name, acceptable, direction, args)", field, k)
				ok = false
			}
		}
		if m.Name == "" && ok {
			p.errorf(n.line, "%s: missing name", field)
			ok = false
		}
		if !ok {
			return m, false
		}
	default:
		p.errorf(n.line, "%s must be a (metric, acceptable) pair or a mapping {name, acceptable}, not %s", field, n.describe())
		return m, false
	}
	if acc != nil && !(acc.kind == nScalar && acc.scalar == nil) {
		var f float64
		switch v := acc.scalar.(type) {
		case int64:
			f = float64(v)
		case float64:
			f = v
		default:
			p.errorf(acc.line, "%s: the acceptable value must be a number or null (not checked), not %s", field, acc.describe())
			return m, false
		}
		if math.IsNaN(f) {
			p.errorf(acc.line, "%s: the acceptable value is NaN", field)
			return m, false
		}
		m.Acceptable = &f
	}
	if m.Direction == "" {
		m.Direction = MetricDirection(m.Name)
	}
	return m, true
}

// deep500Metrics maps Deep500 metric classes to the portal's metric names.
var deep500Metrics = map[string]string{
	"TestAccuracy":        "test_accuracy",
	"TrainingAccuracy":    "train_accuracy",
	"DatasetAccuracy":     "dataset_accuracy",
	"TestLoss":            "test_loss",
	"TrainingLoss":        "training_loss",
	"WallclockTime":       "wallclock_time",
	"FrameworkOverhead":   "framework_overhead",
	"L1Error":             "l1_error",
	"L2Error":             "l2_error",
	"LInfError":           "linf_error",
	"MaxError":            "max_error",
	"DiffHeatmap":         "diff_heatmap",
	"DatasetBias":         "dataset_bias",
	"CommunicationVolume": "communication_volume",
}

// MetricName maps a Deep500 metric class (d5.TestAccuracy, TrainingAccuracy)
// to the portal's snake_case metric name; other CamelCase names are
// converted the same way, and snake_case names are kept.
func MetricName(symbol string) string {
	name := symbol
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if n, ok := deep500Metrics[name]; ok {
		return n
	}
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MetricDirection fills a metric's direction when the recipe leaves it out:
// accuracies and throughputs higher, errors, times, losses and latencies
// lower, and otherwise higher, which is how Deep500 checks every metric.
func MetricDirection(name string) d5list.Direction {
	n := strings.ToLower(name)
	for _, w := range []string{"accuracy", "throughput", "speedup", "efficiency"} {
		if strings.Contains(n, w) {
			return d5list.HigherIsBetter
		}
	}
	for _, w := range []string{"error", "time", "loss", "latency", "overhead", "volume", "bias", "seconds", "epochs", "cost"} {
		if strings.Contains(n, w) {
			return d5list.LowerIsBetter
		}
	}
	if strings.HasSuffix(n, "_s") || strings.HasSuffix(n, "_ms") {
		return d5list.LowerIsBetter
	}
	return d5list.HigherIsBetter
}

// ParseRecipe parses a recipe by its file name: recipe.yaml or recipe.yml
// (YAML), recipe.json (JSON) or recipe.py (a Deep500 Python recipe, read
// without running Python). Errors name the file, line and field.
func ParseRecipe(name string, data []byte) (d5list.Recipe, error) {
	p := &recipeParse{file: name}
	var r d5list.Recipe
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		r = p.parseYAML(data)
	case ".json":
		r = p.parseJSON(data)
	case ".py":
		r = p.parsePython(data)
	default:
		p.errorf(0, "unknown recipe type: name it recipe.yaml, recipe.yml, recipe.json or recipe.py")
	}
	if err := p.rs.err(""); err != nil {
		return d5list.Recipe{}, err
	}
	return r, nil
}
