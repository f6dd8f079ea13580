package verifier

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
)

// The rules of every MLPerf Training round MLCommons' logging package
// (mlcommons/logging) has rules for, one YAML file per round as MLCommons
// keeps its own: a new round is a data change.
//
//go:embed mlperf_rounds/*.yaml
var mlperfRoundFiles embed.FS

// MLPerfRound is what MLCommons' tools check of a submission in one round
// (mlperf_rounds/training_<ruleset>.yaml says where each part comes from).
type MLPerfRound struct {
	Ruleset string `yaml:"ruleset"`
	Round   string `yaml:"round"`
	// Format is how the result files log: "mllog" (:::MLLOG {json}) or
	// "mll" (round 0.6's :::MLL <seconds> <key>: {json}).
	Format string `yaml:"format"`
	// PackageChecks are what the package checker runs besides the
	// compliance checks: "systems" (systems/*.json), "seeds" and "rcp"
	// (closed division).
	PackageChecks []string `yaml:"package_checks"`
	// SystemStatus is the list a system description's status must be in;
	// empty when the round does not check it.
	SystemStatus []string                        `yaml:"system_status"`
	Benchmarks   map[string]MLPerfBenchmarkRules `yaml:"benchmarks"`
	// Configs are the compliance checker's rules files by name (common,
	// closed_common, closed_bert, ...): the checker starts with common,
	// and a rule's enqueue adds another.
	Configs map[string]*ruleConfig `yaml:"configs"`
	// Release is the mlcommons/logging tag whose tools judged the round
	// (1.1.0-rc4, 2.1.0, ...); AtRelease is where they judged otherwise
	// than today's tools, which the rest of the file transcribes.
	Release   string        `yaml:"release"`
	AtRelease *releaseRules `yaml:"at_release"`

	// Rules is which rules this copy of the round applies: RulesRelease or
	// RulesToday; Judge names them for a report.
	Rules string `yaml:"-"`
	Judge string `yaml:"-"`
	// What AtRelease changes beyond the data it replaces.
	seedsOptional, weightsInitWarns, systemStatusFold bool
	scoreScaling                                      string
}

// The rules a round is judged by: its own release's (the default), or
// today's mlcommons/logging, which later tightened some of them.
const (
	RulesRelease = "release"
	RulesToday   = "today"
	// mlperfToday is the mlcommons/logging commit the round files
	// transcribe as today's rules.
	mlperfToday = "7bbf792"
)

// releaseRules are where a round's own release of mlcommons/logging
// judged otherwise than today's: only what differs is given.
type releaseRules struct {
	// SystemStatus replaces the system description checker's status
	// list; SystemStatusFold: a status matches in lower case too, as
	// round 4.0's checker compares status.lower().
	SystemStatus     []string `yaml:"system_status"`
	SystemStatusFold bool     `yaml:"system_status_fold"`
	// SeedsOptional: the seed checker of rounds 1.0 to 4.0 passes a folder
	// none of whose files logs a seed, and fails only a file without one
	// read after a file with one.
	SeedsOptional bool `yaml:"seeds_optional"`
	// WeightsInitWarns: round 1.1's compliance checker only warned where
	// the weights initialisation check failed (no weights_initialization
	// line, or the end check of the initialised tensors).
	WeightsInitWarns bool `yaml:"weights_initialization_warns"`
	// RCPRuns is the RCP checker's run count for benchmarks whose count
	// today's table lacks (dlrm in rounds 1.0 to 2.1).
	RCPRuns map[string]int `yaml:"rcp_runs"`
	// RCPRefs replace a benchmark's reference convergence points with the
	// release's, where MLCommons later changed them.
	RCPRefs map[string][]rcpRef `yaml:"rcp_refs"`
	// RCPUnpruned: the release's RCP checker compared with every
	// reference (pruning to the fastest envelope came with 2.0.0).
	RCPUnpruned bool `yaml:"rcp_unpruned"`
	// RCPPruneByMinEpochs: the release's RCP checker pruned the references
	// by each one's smallest acceptable mean (Min Epochs), not by its mean
	// (2.0.0 to 3.1.0-rc3).
	RCPPruneByMinEpochs bool `yaml:"rcp_prune_by_min_epochs"`
	// RCPTrimmedStdev: the release's RCP checker took a reference's
	// standard deviation over its olympic-trimmed points, not over all of
	// them (1.0.0 to 4.0.0-rc3-rcp-prunning).
	RCPTrimmedStdev bool `yaml:"rcp_trimmed_stdev"`
	// RCPLastListedBatchSize: the release's RCP checker took the
	// global_batch_size of the last file glob listed that logs one, and
	// did not compare the files' (1.0.0 to 2.1.0); today's stops where
	// they differ.
	RCPLastListedBatchSize bool `yaml:"rcp_last_listed_batch_size"`
	// ScoreScaling is how the release's result summarizer normalised a
	// score: "none" (it read no scaling at all), "scaling_json" (only a
	// scaling.json already in the folder: the release's RCP checker wrote
	// none), "rcp_else_scaling_json" (the RCP checker's where it wrote one,
	// else the folder's own scaling.json, which the release's checker did
	// not remove first), or "" (today's: the RCP checker's where it
	// compared the folder with a reference, else scaling.json).
	ScoreScaling string `yaml:"score_scaling"`
	// RenameKeys are keys a rules file named otherwise at the release.
	RenameKeys []struct {
		Config string `yaml:"config"`
		From   string `yaml:"from"`
		To     string `yaml:"to"`
	} `yaml:"rename_keys"`
}

// atRelease applies the release's departures from today's rules.
func (r *MLPerfRound) atRelease(name string) error {
	r.Rules, r.Judge = RulesRelease, "mlcommons/logging "+r.Release+", the round's own release"
	if r.Release == "" {
		r.Judge = "mlcommons/logging " + mlperfToday + " (no release of it judged round " + r.Round + ")"
	}
	a := r.AtRelease
	if a == nil {
		return nil
	}
	if a.SystemStatus != nil {
		r.SystemStatus = a.SystemStatus
	}
	r.systemStatusFold, r.seedsOptional, r.weightsInitWarns = a.SystemStatusFold, a.SeedsOptional, a.WeightsInitWarns
	for b, n := range a.RCPRuns {
		bench, ok := r.Benchmarks[b]
		if !ok || bench.RCP == nil || n < 3 {
			return fmt.Errorf("%s: at_release gives an RCP run count for %s, which has no RCP references here, or fewer than 3 runs", name, b)
		}
		bench.RCP.Runs = n
	}
	for _, bench := range r.Benchmarks {
		if bench.RCP != nil {
			bench.RCP.unpruned = a.RCPUnpruned
			bench.RCP.pruneByMinEpochs = a.RCPPruneByMinEpochs
			bench.RCP.trimmedStdev = a.RCPTrimmedStdev
			bench.RCP.lastListedBatchSize = a.RCPLastListedBatchSize
		}
	}
	switch a.ScoreScaling {
	case "", scoreScalingNone, scoreScalingJSON, scoreScalingKept:
		r.scoreScaling = a.ScoreScaling
	default:
		return fmt.Errorf("%s: at_release score_scaling %q is none of %s, %s, %s", name, a.ScoreScaling, scoreScalingNone, scoreScalingJSON, scoreScalingKept)
	}
	for b, refs := range a.RCPRefs {
		bench, ok := r.Benchmarks[b]
		if !ok || bench.RCP == nil || len(refs) == 0 {
			return fmt.Errorf("%s: at_release gives RCP references for %s, which has no RCP check here", name, b)
		}
		bench.RCP.Refs = refs
	}
	for _, rn := range a.RenameKeys {
		cfg := r.Configs[rn.Config]
		i := -1
		if cfg != nil {
			i = slices.IndexFunc(cfg.Keys, func(k keyRule) bool { return k.Key == rn.From })
		}
		if i < 0 {
			return fmt.Errorf("%s: at_release renames %s in %s, which has no such key", name, rn.From, rn.Config)
		}
		cfg.Keys[i].Key = rn.To
	}
	return nil
}

// MLPerfBenchmarkRules are what the package checker and the RCP checker
// know of one benchmark in a round.
type MLPerfBenchmarkRules struct {
	// Runs is the exact number of result files the package checker wants.
	Runs int `yaml:"runs"`
	// MaxFailed is how many files may fail the compliance checks (1, or 4
	// for unet3d): the result summarizer drops as many scores at each
	// end, and the RCP checker as many convergence points.
	MaxFailed int       `yaml:"max_failed"`
	RCP       *rcpRules `yaml:"rcp"`
}

// ruleConfig is one of MLCommons' rules files: state set up first, keys
// checked line by line, and checks at the end.
type ruleConfig struct {
	// Aggregate folds lines logging one metric each into lines of their
	// own key (stable_diffusion's FID and CLIP, logged apart).
	Aggregate *ruleAggregate `yaml:"aggregate"`
	Begin     []ruleAssign   `yaml:"begin"`
	Keys      []keyRule      `yaml:"keys"`
	End       []*ruleExpr    `yaml:"end"`
	byKey     map[string]*keyRule
}

type ruleAggregate struct {
	Key    string `yaml:"key"`    // the lines folded (eval_accuracy)
	Metric string `yaml:"metric"` // the metadata field naming each line's metric
	Group  string `yaml:"group"`  // the metadata field the evaluations share
	Into   string `yaml:"into"`   // the key of the folded lines
}

// keyRule is one KEY record: how often the key must be logged, what each
// line must satisfy, and what it changes in the checker's state.
type keyRule struct {
	Key string `yaml:"key"`
	// Req is exactly_one, at_least_one, at_least (N times),
	// at_least_one_or (this key or one of Or), optional, or "" (none).
	Req string   `yaml:"req"`
	N   int      `yaml:"n"`
	Or  []string `yaml:"or"`
	// Check must hold on every line of the key (on the first only for a
	// submission_* key); FirstCheck on the first line.
	Check      []*ruleExpr `yaml:"check"`
	FirstCheck *ruleExpr   `yaml:"first_check"`
	// AtLeastOne must hold on at least one line: the quality target.
	AtLeastOne *ruleExpr    `yaml:"at_least_one"`
	Set        []ruleAssign `yaml:"set"`
	// Enqueue names a rules file to check next; {value} is the line's
	// value.
	Enqueue string `yaml:"enqueue"`
}

// rcpRules are the RCP checker's reference convergence points for a
// benchmark, and how it reads a run's convergence.
type rcpRules struct {
	// Skip: the package checker runs no RCP check (minigo).
	Skip bool `yaml:"skip"`
	// Runs is the RCP checker's own count of a submission's runs, which
	// its statistics use; 0 where its table has none for the benchmark.
	Runs     int `yaml:"runs"`
	Converge struct {
		// LastEval: the field of the last evaluation before a successful
		// run_stop (epoch_num, rounded to 3 places, or samples_count).
		LastEval string `yaml:"last_eval"`
		// FirstPassing: the smallest value of this field among the
		// evaluations whose metrics (folded by metric) satisfy Passing.
		FirstPassing string    `yaml:"first_passing"`
		Passing      *ruleExpr `yaml:"passing"`
	} `yaml:"converge"`
	// SpeedupOffset is subtracted from the minimum mean before the
	// largest speedup is taken (llama31_405b from round 5.0).
	SpeedupOffset float64  `yaml:"speedup_offset"`
	Refs          []rcpRef `yaml:"refs"`

	// unpruned: the RCP checker compares with every reference, not only
	// those on the fastest-converging envelope (round 1.1's release).
	// pruneByMinEpochs, trimmedStdev and lastListedBatchSize: as
	// releaseRules says.
	unpruned, pruneByMinEpochs, trimmedStdev, lastListedBatchSize bool

	once   sync.Once
	ref    *rcpReference
	refErr error
}

type rcpRef struct {
	Name   string    `yaml:"name"`
	BS     int       `yaml:"bs"`
	Epochs []float64 `yaml:"epochs"`
}

const (
	reqExactlyOne    = "exactly_one"
	reqAtLeastOne    = "at_least_one"
	reqAtLeast       = "at_least"
	reqAtLeastOneOr  = "at_least_one_or"
	reqOptional      = "optional"
	packageSystems   = "systems"
	packageSeeds     = "seeds"
	packageRCP       = "rcp"
	formatMLL        = "mll"
	scoreScalingNone = "none"
	scoreScalingJSON = "scaling_json"
	scoreScalingKept = "rcp_else_scaling_json"
	formatMLLOG      = "mllog"
	firstConfigName  = "common"
	divisionClosed   = "closed"
	enqueueValueHole = "{value}"
)

// validRules refuses rules other than RulesRelease (also "") and
// RulesToday.
func validRules(rules string) error {
	if rules != "" && rules != RulesRelease && rules != RulesToday {
		return d5list.Errorf(d5list.EINVALID, "rules %q: give %s (the round's own release of mlcommons/logging) or %s", rules, RulesRelease, RulesToday)
	}
	return nil
}

// as is the round judged by rules: RulesRelease, RulesToday, or "" for
// the release's.
func (r *MLPerfRound) as(rules string) (*MLPerfRound, error) {
	if rules == "" {
		rules = RulesRelease
	}
	if err := validRules(rules); err != nil {
		return nil, err
	}
	if r.Rules == rules {
		return r, nil
	}
	return loadMLPerfRoundRules(r.Round, rules)
}

// statusesFor is the status list a system description is held to: the
// round's, and where the round's checker also compares the status in
// lower case (4.0's), the description's own status when its lower case
// is in the list.
func (r *MLPerfRound) statusesFor(desc []byte) []string {
	if !r.systemStatusFold || len(r.SystemStatus) == 0 {
		return r.SystemStatus
	}
	var d struct {
		Status any `json:"status"`
	}
	if json.Unmarshal(desc, &d) != nil {
		return r.SystemStatus
	}
	if st, ok := d.Status.(string); ok && slices.Contains(r.SystemStatus, strings.ToLower(st)) {
		return append(slices.Clip(r.SystemStatus), st)
	}
	return r.SystemStatus
}

func (r *MLPerfRound) runs(check string) bool { return slices.Contains(r.PackageChecks, check) }

// BenchmarkNames lists the round's benchmarks, sorted.
func (r *MLPerfRound) BenchmarkNames() []string {
	names := make([]string, 0, len(r.Benchmarks))
	for b := range r.Benchmarks {
		names = append(names, b)
	}
	sort.Strings(names)
	return names
}

// roundFiles maps each round ("3.1") to its file, by the files' names:
// a check parses only the rounds it reads.
var roundFiles = sync.OnceValue(func() map[string]string {
	entries, _ := mlperfRoundFiles.ReadDir("mlperf_rounds")
	files := map[string]string{}
	for _, e := range entries {
		if m := reRoundFile.FindStringSubmatch(e.Name()); m != nil {
			files[m[1]] = path.Join("mlperf_rounds", e.Name())
		}
	}
	return files
})

var reRoundFile = regexp.MustCompile(`^training_(\d+\.\d+)\.\d+\.yaml$`)

type loadedRound struct {
	once  sync.Once
	round *MLPerfRound
	err   error
}

var loadedRounds sync.Map // round name → *loadedRound

// loadMLPerfRound parses one round's file, once, as today's rules judge.
func loadMLPerfRound(round string) (*MLPerfRound, error) {
	return loadMLPerfRoundRules(round, RulesToday)
}

// loadMLPerfRoundRules parses one round's file, once for each of the
// rules (RulesRelease or RulesToday).
func loadMLPerfRoundRules(round, rules string) (*MLPerfRound, error) {
	file, ok := roundFiles()[round]
	if !ok {
		return nil, fmt.Errorf("no rules for MLPerf Training %s", round)
	}
	v, _ := loadedRounds.LoadOrStore(round+"/"+rules, &loadedRound{})
	l := v.(*loadedRound)
	l.once.Do(func() {
		data, err := mlperfRoundFiles.ReadFile(file)
		if err == nil {
			l.round, err = parseMLPerfRoundRules(file, data, rules)
		}
		if err == nil && l.round.Round != round {
			err = fmt.Errorf("%s: round %s in a file named for %s", file, l.round.Round, round)
		}
		l.err = err
	})
	return l.round, l.err
}

// MLPerfRoundNames lists the rounds d5list has rules for, oldest first.
func MLPerfRoundNames() []string {
	names := slices.Collect(maps.Keys(roundFiles()))
	slices.SortFunc(names, func(a, b string) int {
		if roundLess(a, b) {
			return -1
		}
		return 1
	})
	return names
}

func parseMLPerfRound(name string, data []byte) (*MLPerfRound, error) {
	return parseMLPerfRoundRules(name, data, RulesToday)
}

func parseMLPerfRoundRules(name string, data []byte, rules string) (*MLPerfRound, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var r MLPerfRound
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch rules {
	case RulesToday:
		r.Rules, r.Judge = RulesToday, "today's mlcommons/logging ("+mlperfToday+")"
	case RulesRelease:
		if err := r.atRelease(name); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("rules %q: %s or %s", rules, RulesRelease, RulesToday)
	}
	if r.Round == "" || r.Ruleset == "" || len(r.Benchmarks) == 0 || r.Configs[firstConfigName] == nil {
		return nil, fmt.Errorf("%s: round, ruleset, benchmarks and the %s rules are required", name, firstConfigName)
	}
	if r.Format != formatMLLOG && r.Format != formatMLL {
		return nil, fmt.Errorf("%s: format must be %s or %s", name, formatMLLOG, formatMLL)
	}
	for _, c := range r.PackageChecks {
		if c != packageSystems && c != packageSeeds && c != packageRCP {
			return nil, fmt.Errorf("%s: package check %q is none of %s, %s, %s", name, c, packageSystems, packageSeeds, packageRCP)
		}
	}
	for b, rules := range r.Benchmarks {
		if rules.Runs < 1 {
			return nil, fmt.Errorf("%s: benchmark %s needs runs", name, b)
		}
		if rules.MaxFailed == 0 {
			rules.MaxFailed = 1
			r.Benchmarks[b] = rules
		}
		if rcp := rules.RCP; rcp != nil && !rcp.Skip {
			c := rcp.Converge
			if (c.LastEval == "") == (c.FirstPassing == "") || (c.FirstPassing != "") != (c.Passing != nil) {
				return nil, fmt.Errorf("%s: benchmark %s: rcp converge needs last_eval, or first_passing with passing", name, b)
			}
			for _, ref := range rcp.Refs {
				if ref.BS < 1 || len(ref.Epochs) < 2*rules.MaxFailed+1 {
					return nil, fmt.Errorf("%s: benchmark %s: RCP %s needs a batch size and more than %d points", name, b, ref.Name, 2*rules.MaxFailed)
				}
			}
		}
	}
	for cname, cfg := range r.Configs {
		cfg.byKey = map[string]*keyRule{}
		for i := range cfg.Keys {
			k := &cfg.Keys[i]
			switch {
			case k.Key == "":
				return nil, fmt.Errorf("%s: %s: a key rule without a key", name, cname)
			case cfg.byKey[k.Key] != nil:
				return nil, fmt.Errorf("%s: %s: key %s given twice", name, cname, k.Key)
			case !slices.Contains([]string{"", reqExactlyOne, reqAtLeastOne, reqAtLeast, reqAtLeastOneOr, reqOptional}, k.Req):
				return nil, fmt.Errorf("%s: %s: rule for %q: req must be %s, %s, %s, %s or %s", name, cname, k.Key, reqExactlyOne, reqAtLeastOne, reqAtLeast, reqAtLeastOneOr, reqOptional)
			case (k.Req == reqAtLeast) != (k.N > 0), (k.Req == reqAtLeastOneOr) != (len(k.Or) > 0):
				return nil, fmt.Errorf("%s: %s: rule for %q: n goes with at_least, or with at_least_one_or", name, cname, k.Key)
			}
			cfg.byKey[k.Key] = k
		}
	}
	return &r, nil
}

// MLPerfRounds parses and lists every round d5list has rules for, oldest
// first.
func MLPerfRounds() ([]*MLPerfRound, error) {
	var out []*MLPerfRound
	for _, name := range MLPerfRoundNames() {
		r, err := loadMLPerfRound(name)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func roundLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}
