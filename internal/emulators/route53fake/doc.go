// Package route53fake is an in-process fake of Amazon Route 53's record API, an http.Handler
// that speaks the documented REST-XML wire format (API version 2013-04-01), so that the real
// aws-sdk-go-v2 client (and the route53 router driver on it) can be tested on loopback.
//
// It serves ChangeResourceRecordSets (POST /2013-04-01/hostedzone/{Id}/rrset), ListResourceRecordSets
// (GET the same path, with name/type/identifier paging and maxitems, records in Route 53's order:
// DNS name with its labels reversed, then type, then set identifier), GetChange
// (GET /2013-04-01/change/{Id}) and GetHostedZone (every zone's domain is example.com.). A
// change batch is validated as a whole against the zone before
// anything is applied (all-or-nothing): a DELETE must match the stored record set in every field,
// a CREATE of an existing name/type/set identifier fails, records of one name and type must all be
// weighted or none, weights are 0..255, and a CNAME shares its name with no other type. A refused
// batch answers HTTP 400 with Route 53's own <InvalidChangeBatch><Messages> body, which the SDK
// parses into *types.InvalidChangeBatch; other errors use the <ErrorResponse><Error> shape
// (NoSuchHostedZone, NoSuchChange, InvalidInput). UPSERTs are applied but counted (Server.Upserts),
// so a test can assert that a client never sends one. Every change answers PENDING, and GetChange
// says PENDING for the first PendingPolls polls of it, INSYNC afterwards.
//
// What it does not model: SigV4 signatures and credentials (any or none are accepted; nothing is
// authorised), hosted-zone management (zones are made by New/AddZone only), health checks
// (HealthCheckId is an opaque string; no record is ever unhealthy), DNS answers themselves
// (no resolver, no weighted selection, no TTL caching), alias target validation, traffic
// policies, DNSSEC, request quotas and throttling (never 429/Throttling unless a test injects
// a failure with FailNext), escaping of special characters in names (names are lower-cased and
// given a trailing dot, nothing else), the per-batch limits on changes and values, and
// PriorRequestNotComplete.
package route53fake
