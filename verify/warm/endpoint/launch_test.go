//go:build integration

package endpoint

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/verify/warm"
)

// engineSim serves the engine simulator on the sample model over loopback: a replica already
// serving, as an endpoint launcher finds one.
func engineSim(t *testing.T) string {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(context.Background(), l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func TestEndpointLauncher(t *testing.T) {
	url := engineSim(t)
	inst, err := (&Launcher{URL: url + "/v1/"}).Launch(context.Background(), launch.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Exited() != nil || inst.Stop(context.Background()) != nil || inst.BaseURL() != url {
		t.Errorf("endpoint instance %v", inst.BaseURL())
	}
	o := warm.ProbeOptions{Models: []string{sample.DefaultServedName}, LoRAs: []string{sample.LoRAName}, Timeout: 30 * time.Second,
		RequestTimeout: 3 * time.Second, StallTimeout: 500 * time.Millisecond}
	if res := warm.ProbeInstance(context.Background(), inst, o); res.Verdict != warm.Warm {
		t.Errorf("%+v", res)
	}
	if _, err := (&Launcher{URL: "localhost:8000"}).Launch(context.Background(), launch.Spec{}); err == nil {
		t.Error("bad URL accepted")
	}
}
