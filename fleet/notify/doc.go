// Package notify delivers a fleet's notifications (fleet `notify:`) to webhooks: a failover run's
// start, hold, refusal and end, and a drill's verdict, as Slack-compatible JSON or a generic JSON
// body (Event), without ever blocking the caller or showing a webhook URL.
//
// Send only queues (a bounded queue per webhook; a full queue drops the event with a warning), one
// goroutine per webhook posts with a per-attempt timeout and a bounded body, retrying a little
// with backoff, and Close flushes with a deadline. A webhook URL is a secret: it is read from an
// environment variable or a file, and no log line or error ever shows it.
package notify
