//go:build integration

package replicate_test

import (
	"os"
	"testing"

	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }
