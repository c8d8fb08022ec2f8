package bench

import (
	"os"
	"testing"
	"time"
)

func TestProcStat(t *testing.T) {
	t.Parallel()
	// Burn a little CPU so the process has some to show.
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	st, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() || st.comm == "" || st.cpu <= 0 {
		t.Errorf("own stat = %+v, want ppid %d, a name and some CPU", st, os.Getppid())
	}
	self, err := selfCPU()
	if err != nil || self <= 0 {
		t.Errorf("selfCPU = %v, %v", self, err)
	}
	// The parent's tree includes this process.
	tree, err := treeCPU(os.Getppid())
	if err != nil || tree < st.cpu {
		t.Errorf("treeCPU(parent) = %v, %v; want at least this process's %v", tree, err, st.cpu)
	}
	if _, err := readProcStat(-1); err == nil {
		t.Error("readProcStat(-1): no error")
	}
}
