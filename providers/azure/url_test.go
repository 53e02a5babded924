package azure_test

import (
	"testing"

	"lifeboat/providers"
	"lifeboat/providers/providertest"
)

// The az:// grammar, through the factory this package registers with.
func TestParseURL(t *testing.T) {
	providertest.ParseURLs(t, []providertest.URLCase{
		{In: "az://acct/models/llama-3.3-70b-awq/", Want: providers.Location{Scheme: "az", Account: "acct", Bucket: "models", Prefix: "llama-3.3-70b-awq"}},
		{In: "az://devstoreaccount1/c-1", Want: providers.Location{Scheme: "az", Account: "devstoreaccount1", Bucket: "c-1"}},
	}, []providertest.BadURLCase{
		{In: "az:acct/c/x", Says: "want az://ACCOUNT/CONTAINER/PREFIX"},
		{In: "az://", Says: "missing account"},
		{In: "az://acct", Says: "missing container"},
		{In: "az://acct/", Says: "missing container"},
		{In: "az://Acct-Name/c/x", Says: `storage account name "Acct-Name"`},
		{In: "az://acct/ab/x", Says: `container name "ab"`},
		{In: "az://acct/bad--name/x", Says: `container name "bad--name"`},
		{In: "az://acct/cont/a/./b", Says: `prefix "a/./b"`},
		{In: "az://acct/cont/x?sv=2020", Says: `unknown query parameter "sv"`},
	})
}
