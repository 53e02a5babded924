// Package replicate makes copies of a DR bundle that verify can prove: Run repairs a replica in any
// store from another (only what is missing or wrong, every byte checked against the manifest as it
// streams), and Restore lays a replica out in a local directory for a launcher to serve.
package replicate
