package sql_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// dataLayerParallel is how many of this package's tests run at once
// unless -parallel says otherwise. Go's default is the number of CPUs
// (two here), but these tests wait on Postgres far more than they
// compute: at two, 120 of them took their sum over two (four to five
// minutes of a loaded make test, the longest package of the run).
const dataLayerParallel = "4"

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", dataLayerParallel); err != nil {
			fmt.Fprintf(os.Stderr, "sql tests: set -parallel %s: %v\n", dataLayerParallel, err)
			os.Exit(2)
		}
	}
	goleak.VerifyTestMain(m)
}
