package http

import (
	"bytes"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCreateJob measures POST /v1/jobs over real HTTP, from parallel
// clients, through the whole server (auth, decoding, validation, the
// insert and its audit entry).
//
//	go test ./http -run '^$' -bench CreateJob -cpu 16 -cpuprofile cpu.out
func BenchmarkCreateJob(b *testing.B) {
	e := newEnv(b)
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	client := ts.Client()
	client.Transport.(*nethttp.Transport).MaxIdleConnsPerHost = 64
	runAt := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	var seq atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(`{"name":"bench-%d","run_at":%q,"target_url":"http://127.0.0.1:9/hook"}`, seq.Add(1), runAt)
			req, _ := nethttp.NewRequest("POST", ts.URL+"/v1/jobs", bytes.NewBufferString(body))
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != nethttp.StatusCreated {
				b.Errorf("%d %s", resp.StatusCode, out)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
