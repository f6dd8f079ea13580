package harness

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// digitsFiles are where scikit-learn keeps the UCI digits on the runner's
// host (Debian's python3-sklearn first): the same file a run's
// load_digits() reads inside the sandbox, whose /usr is the host's.
var digitsFiles = []string{
	"/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
	"/usr/local/lib/python3*/dist-packages/sklearn/datasets/data/digits.csv.gz",
	"/usr/local/lib/python3*/site-packages/sklearn/datasets/data/digits.csv.gz",
}

// dataset is a training task's split: inputs in [0, 1] as float32 values,
// row after row, and labels.
type dataset struct {
	features      int
	xTrain, xTest []float64
	yTrain, yTest []int
	nTrain, nTest int
	classes       int
}

var digits struct {
	once sync.Once
	x    []float64 // 1797 x 64, pixel/16 rounded to float32
	y    []int
	err  error
}

// loadDigits reads the digits once: 64 pixels (0 to 16) and the label per
// line, as load_digits does, scaled as the harness scales them.
func loadDigits() ([]float64, []int, error) {
	digits.once.Do(func() {
		var path string
		for _, pattern := range digitsFiles {
			if m, _ := filepath.Glob(pattern); len(m) > 0 {
				path = m[0]
				break
			}
		}
		if path == "" {
			digits.err = fmt.Errorf("the UCI digits of scikit-learn are not on this runner (apt-get install python3-sklearn)")
			return
		}
		f, err := os.Open(path)
		if err != nil {
			digits.err = err
			return
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			digits.err = fmt.Errorf("%s: %w", path, err)
			return
		}
		sc := bufio.NewScanner(gz)
		for line := 1; sc.Scan(); line++ {
			fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
			if len(fields) != 65 {
				digits.err = fmt.Errorf("%s:%d: %d values, want 64 pixels and a label", path, line, len(fields))
				return
			}
			for i, s := range fields {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					digits.err = fmt.Errorf("%s:%d: %w", path, line, err)
					return
				}
				if i == 64 {
					digits.y = append(digits.y, int(v))
				} else {
					digits.x = append(digits.x, float64(float32(v/16)))
				}
			}
		}
		digits.err = sc.Err()
	})
	return digits.x, digits.y, digits.err
}

// digitsSplit is d5harness.digits_split: the test share first in the
// order of a stream of the harness's.
func digitsSplit(testShare float64) (*dataset, error) {
	x, y, err := loadDigits()
	if err != nil {
		return nil, err
	}
	n := len(y)
	order := sortedOrder(Uniform(StreamKey("uci-digits", "split"), n))
	nTest := testCount(n, testShare)
	d := &dataset{features: 64, classes: 10, nTest: nTest, nTrain: n - nTest}
	for k, i := range order {
		row := x[i*64 : (i+1)*64]
		if k < nTest {
			d.xTest, d.yTest = append(d.xTest, row...), append(d.yTest, y[i])
		} else {
			d.xTrain, d.yTrain = append(d.xTrain, row...), append(d.yTrain, y[i])
		}
	}
	return d, nil
}

// testCount is how many of n samples a split of testShare tests on.
func testCount(n int, testShare float64) int {
	return int(float64(n) * testShare)
}

// sortedOrder is numpy's argsort(kind="stable") of u.
func sortedOrder(u []float64) []int {
	order := make([]int, len(u))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case u[a] < u[b]:
			return -1
		case u[a] > u[b]:
			return 1
		}
		return 0
	})
	return order
}
