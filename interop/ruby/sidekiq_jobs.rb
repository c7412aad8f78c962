# The job classes of the Sidekiq server that sidekiq_server.rb starts (sidekiq -r this file).
# Every execution appends one JSON line to RECORD_FILE, written by a server middleware so that it
# sees exactly what Sidekiq ran:
#   {"jid":..,"class":..,"queue":..,"args":[..],"retry_count":..,"result":"ok"|"error: ..","pid":..,"at":<epoch s>}
#   RECORD_FILE    required: where the executions are recorded
#   POLL_INTERVAL  seconds between polls of the schedule and retry sets (Sidekiq's default is 5 s,
#                  after a first wait of 10-15 s; the tests use 1)
#   EXTRA_CLASSES  comma list of more class names that behave like RecordJob (e.g. GoJob)
#   ITERABLE_JOBS  when set, the iterable job classes of iterable_jobs.rb too (Sidekiq 7.3 or later)
require "json"
require_relative "sidekiq_env"
require_relative "iterable_jobs" if ENV["ITERABLE_JOBS"]

RECORD_FILE = ENV.fetch("RECORD_FILE") { abort "sidekiq_jobs.rb: RECORD_FILE is not set" }
InteropEnv.set_option(:poll_interval_average, Float(ENV["POLL_INTERVAL"])) if ENV["POLL_INTERVAL"]

# Records every execution, successful or not; an exception is recorded and raised again, so
# Sidekiq retries the job as usual.
class InteropRecorder
  def call(_worker, job, queue)
    yield
    write(job, queue, "ok")
  rescue Exception => e # standard:disable Lint/RescueException
    write(job, queue, "error: #{e.class}: #{e.message}")
    raise
  end

  private

  def write(job, queue, result)
    line = JSON.generate("jid" => job["jid"], "class" => job["class"], "queue" => queue,
      "args" => job["args"], "retry_count" => job["retry_count"], "result" => result,
      "pid" => Process.pid, "at" => Time.now.to_f)
    # One write per line under an exclusive lock: Sidekiq's threads share the file, and the Go
    # test reads it while they write.
    File.open(RECORD_FILE, "a") do |f|
      f.flock(File::LOCK_EX)
      f.write(line + "\n")
    end
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add InteropRecorder }
end

# A job that succeeds; exq enqueues it by name.
class RecordJob
  include Sidekiq::Worker

  def perform(*) = nil
end

# A job that sleeps args[0] seconds (default 1), so that a test sees it on Sidekiq's busy list.
class SlowJob
  include Sidekiq::Worker

  def perform(seconds = 1, *) = sleep(Float(seconds))
end

ENV.fetch("EXTRA_CLASSES", "").split(",").map(&:strip).reject(&:empty?).each do |name|
  Object.const_set(name, Class.new(RecordJob))
end
