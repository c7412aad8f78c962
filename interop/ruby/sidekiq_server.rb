#!/usr/bin/env ruby
# Starts a Sidekiq 6.4 server with the classes of sidekiq_jobs.rb. It execs sidekiq, so the pid
# the Go test holds is Sidekiq's own, and TERM stops Sidekiq itself (jobs in flight go back to
# their queue after the 5 s timeout).
#   env: REDIS_URL, REDIS_NAMESPACE (sidekiq_env.rb), RECORD_FILE, POLL_INTERVAL, EXTRA_CLASSES
#        (sidekiq_jobs.rb), QUEUE (comma list, default "default"), CONCURRENCY (default 5)
argv = ["sidekiq", "-r", File.expand_path("sidekiq_jobs.rb", __dir__),
  "-c", ENV.fetch("CONCURRENCY", "5"), "-t", "5"]
ENV.fetch("QUEUE", "default").split(",").each { |q| argv.push("-q", q) }
exec(*argv, *ARGV)
