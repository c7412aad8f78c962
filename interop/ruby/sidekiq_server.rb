#!/usr/bin/env ruby
# Starts a Sidekiq server with the classes of sidekiq_jobs.rb. It execs sidekiq, so the pid the
# Go test holds is Sidekiq's own, and TERM stops Sidekiq itself (jobs in flight go back to their
# queue after the 5 s timeout).
#   env: REDIS_URL, REDIS_NAMESPACE (sidekiq_env.rb), RECORD_FILE, POLL_INTERVAL, EXTRA_CLASSES
#        (sidekiq_jobs.rb), QUEUE (comma list, default "default"), CONCURRENCY (default 5)
# Sidekiq 6 runs as the installed `sidekiq` command. A Sidekiq 7 or 8 loaded from its source
# (RUBYLIB) runs as the bin/sidekiq beside the lib/ it was loaded from: the installed command
# would activate the installed gem instead.
argv = ["-r", File.expand_path("sidekiq_jobs.rb", __dir__),
  "-c", ENV.fetch("CONCURRENCY", "5"), "-t", "5"]
ENV.fetch("QUEUE", "default").split(",").each { |q| argv.push("-q", q) }
require "sidekiq"
if Sidekiq::VERSION.start_with?("6.")
  exec("sidekiq", *argv, *ARGV)
end
lib = $LOADED_FEATURES.find { |f| f.end_with?("/lib/sidekiq.rb") } or abort "sidekiq_server.rb: where was sidekiq.rb loaded from?"
require "rbconfig"
exec(RbConfig.ruby, File.expand_path("../bin/sidekiq", File.dirname(lib)), *argv, *ARGV)
