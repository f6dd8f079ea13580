package d5list

// RerunProgress is a verification re-run as its competitor follows it:
// which run it is on, how far each run got and about how long is left,
// read from the MLLOG lines the runner streams (portal.Service's
// RerunProgress).
type RerunProgress struct {
	// Runs holds one entry per run the re-run makes, in order.
	Runs []RunProgress `json:"runs"`
	// Current is the number (1-based) of the run now running or about to
	// start, 0 once every run is done.
	Current int `json:"current"`
	// Metric is the MLLOG key of the quality metric Value reads.
	Metric string `json:"metric,omitempty"`
	// SecondsLeft is the estimated time to the last run's end, -1 when
	// there is nothing to estimate it from; EstimatedFrom says what it is
	// estimated from: EstimateFromRuns or EstimateFromClaim.
	SecondsLeft   float64 `json:"seconds_left"`
	EstimatedFrom string  `json:"estimated_from,omitempty"`
}

// What a re-run's time left is estimated from: the runs it has finished,
// or, before the first one ends, the claimed times of the runs.
const (
	EstimateFromRuns  = "runs"
	EstimateFromClaim = "claim"
)

// RunProgress is one run of a re-run.
type RunProgress struct {
	Number int `json:"number"` // 1-based
	// State is RunWaiting, RunRunning or RunDone.
	State string `json:"state"`
	// Epoch and Value are the latest epoch the run logged and its latest
	// value of the quality metric, where it logged them.
	Epoch *float64 `json:"epoch,omitempty"`
	Value *float64 `json:"value,omitempty"`
	// Fraction is how far the run is, 0 to 1: its epochs of those its
	// claim took, or its time of the time expected.
	Fraction float64 `json:"fraction"`
	// Seconds is the run's time so far, or its whole time once done, as
	// the portal saw its lines arrive (0 where those lines are no longer
	// kept).
	Seconds float64 `json:"seconds"`
}

// The states of a run of a re-run.
const (
	RunWaiting = "waiting"
	RunRunning = "running"
	RunDone    = "done"
)
