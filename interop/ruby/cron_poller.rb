#!/usr/bin/env ruby
# A Sidekiq 6.4 server whose only work is sidekiq-cron 1.8's poller (Debian's ruby-sidekiq-cron),
# as in production, where the poller is a thread of every Sidekiq server: run as a script, it execs
# `sidekiq -r` this same file, so the pid the Go test holds is Sidekiq's own and TERM stops it
# (Launcher#stop terminates the cron poller first). The server fetches only QUEUE, a queue no test
# pushes to, so the jobs the poller enqueues are left to exq. Sidekiq's own scheduled-set poller
# and heartbeat run too (the process shows on the Busy page), as they would in production.
#   env: REDIS_URL, REDIS_NAMESPACE (sidekiq_env.rb)
#        CRON_POLL      sidekiq-cron's cron_poll_interval in seconds (a float is fine; default 30,
#                       sidekiq-cron's own). Each wait is random in [0.5, 1.5) × CRON_POLL while
#                       Sidekiq::ProcessSet counts fewer than 10 processes, [0, 1) × CRON_POLL past.
#        POLL_INTERVAL  Sidekiq's poll_interval_average (default: unset). Unset, the first cron poll
#                       comes 10-15 s after boot, as in production; set (the tests use 1), 0-5 s.
#        QUEUE          the queue the server fetches (default "cron-poller-idle")
#        POLL_LOG       optional file: one line "<epoch seconds> <cron jobs seen>" appended after
#                       each poll, the readiness signal (the log gets "cron_poller: poll N done" too)
if $PROGRAM_NAME == __FILE__
  exec("sidekiq", "-r", File.expand_path(__FILE__), "-c", "1", "-t", "5",
    "-q", ENV.fetch("QUEUE", "cron-poller-idle"), *ARGV)
end

require_relative "sidekiq_env"
require "sidekiq-cron" # sidekiq/cron/launcher.rb prepends the poller to Sidekiq::Launcher

InteropEnv.set_option(:cron_poll_interval, Float(ENV["CRON_POLL"])) if ENV["CRON_POLL"]
InteropEnv.set_option(:poll_interval_average, Float(ENV["POLL_INTERVAL"])) if ENV["POLL_INTERVAL"]

# Observes each poll without changing it: Sidekiq::Cron::Poller#enqueue (Job.all, then
# test_and_enque_for_time! on each valid job) runs as is, then the poll is logged.
module InteropCronPollLog
  def enqueue
    super
  ensure
    @interop_polls = (@interop_polls || 0) + 1
    now = Time.now.to_f
    Sidekiq.logger.info("cron_poller: poll #{@interop_polls} done at #{format("%.3f", now)}")
    if (path = ENV["POLL_LOG"]) && !path.empty?
      count = begin
        Sidekiq::Cron::Job.count
      rescue
        -1
      end
      File.open(path, "a") { |f| f.write("#{format("%.3f", now)} #{count}\n") }
    end
  end
end
Sidekiq::Cron::Poller.prepend(InteropCronPollLog)
