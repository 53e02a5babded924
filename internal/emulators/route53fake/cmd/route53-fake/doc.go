// Command route53-fake serves the Route 53 fake (package route53fake) on a local port, for demos
// and manual runs of the route53 router driver: it prints its base URL (the driver's
// router.endpoint) and serves until interrupted. It checks no credentials and no signatures.
//
//	route53-fake -listen 127.0.0.1:0 -zone Z0123456789ABCDEFGHIJ -seed records.json
//
// A seed file (see ../../testdata/seed.json) is {"zones": {"Z…": [{"Name": "api.example.com.", "Type": "A", "SetIdentifier":
// "us-east-1", "Weight": 10, "TTL": 30, "ResourceRecords": [{"Value": "192.0.2.1"}]}, …]}}.
package main
