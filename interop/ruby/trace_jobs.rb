#!/usr/bin/env ruby
# A Sidekiq 6.4 server for interop/trace_test.go: the classes and the recorder of sidekiq_jobs.rb
# plus TraceFailJob, which always raises, so Sidekiq's JobRetry rewrites the job into the retry
# set. Run as a script, it execs `sidekiq -r` this same file (as cron_poller.rb does), so the pid
# the Go test holds is Sidekiq's own and TERM stops it.
#   env: REDIS_URL, REDIS_NAMESPACE (sidekiq_env.rb), RECORD_FILE, POLL_INTERVAL (sidekiq_jobs.rb)
#        QUEUE       comma list of queues (default "trace")
#        TRACE_FILE  required: one JSON line per execution with the trace fields of the job hash as
#                    Sidekiq's server middleware sees it (where opentelemetry-ruby's Sidekiq
#                    instrumentation extracts the context):
#                    {"jid":..,"traceparent":..,"tracestate":..,"exq_first_run":..}
if $PROGRAM_NAME == __FILE__
  argv = ["sidekiq", "-r", File.expand_path(__FILE__), "-c", "1", "-t", "5"]
  ENV.fetch("QUEUE", "trace").split(",").each { |q| argv.push("-q", q) }
  exec(*argv, *ARGV)
end

require_relative "sidekiq_jobs"

TRACE_FILE = ENV.fetch("TRACE_FILE") { abort "trace_jobs.rb: TRACE_FILE is not set" }

# Records the trace fields of every job before it runs (an exception still propagates).
class InteropTraceFields
  KEYS = %w[traceparent tracestate exq_first_run].freeze

  def call(_worker, job, _queue)
    line = JSON.generate({"jid" => job["jid"]}.merge(KEYS.to_h { |k| [k, job[k]] }))
    File.open(TRACE_FILE, "a") do |f|
      f.flock(File::LOCK_EX)
      f.write(line + "\n")
    end
    yield
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add InteropTraceFields }
end

# A job that always fails: Sidekiq retries it (the job's "retry" allowing) by writing the job hash,
# every field it does not know included, back into the retry set.
class TraceFailJob
  include Sidekiq::Worker

  class Failure < StandardError; end

  def perform(*)
    raise Failure, "trace_jobs.rb: TraceFailJob fails on purpose"
  end
end
