package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"lifeboat/internal/base/wait"
)

func TestSleep(t *testing.T) {
	if err := wait.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a full sleep: %v", err)
	}
	if err := wait.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("no sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context must end an hour's sleep with its error, got %v", err)
	}
	if err := wait.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context, no sleep: got %v", err)
	}
}
