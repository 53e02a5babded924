//go:build integration

package warm

import (
	"os"
	"testing"

	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }
