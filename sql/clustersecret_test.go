package sql_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestClusterSecretIsCreatedOnceAndShared: instances asking at once for a
// cluster secret all get one and the same random value, which later calls
// return again; another name is another secret.
func TestClusterSecretIsCreatedOnceAndShared(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewURL)
	const n = 8
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// One pool each, as separate instances would have.
		db := sqltest.Open(t, dsn, "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = db.ClusterSecret(ctx, "console-session")
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if len(got[i]) != sql.ClusterSecretBytes || !bytes.Equal(got[i], got[0]) {
			t.Fatalf("caller %d got %x, caller 0 %x: want one %d-byte secret", i, got[i], got[0], sql.ClusterSecretBytes)
		}
	}
	db := sqltest.Open(t, dsn, "")
	again, err := db.ClusterSecret(ctx, "console-session")
	if err != nil || !bytes.Equal(again, got[0]) {
		t.Fatalf("a later call: %x, %v; want the stored %x", again, err, got[0])
	}
	other, err := db.ClusterSecret(ctx, "other")
	if err != nil || bytes.Equal(other, got[0]) || bytes.Equal(other, make([]byte, len(other))) {
		t.Fatalf("another name: %x, %v; want another random secret", other, err)
	}
}
