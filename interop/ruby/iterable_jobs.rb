# The iterable job class of the iteration interop tests (Sidekiq 7.3 or later), loaded by the
# Sidekiq server with `-r` beside sidekiq_jobs.rb. IterWalk walks items 0...n with Sidekiq's own
# array_enumerator, so its cursor is the index of the next item, as the Go side's Iteration[int, int]:
#   args  [n]
#   each item   HINCRBY itest:items <item> 1, then sleeps ITER_PACE seconds (default 0.01)
#   hooks       RPUSH itest:hooks "<hook> <jid> <cursor>"
require "sidekiq"

class IterWalk
  include Sidekiq::IterableJob

  PACE = Float(ENV.fetch("ITER_PACE", "0.01"))

  def build_enumerator(n, cursor:)
    array_enumerator((0...n).to_a, cursor: cursor)
  end

  def each_iteration(item, _n)
    Sidekiq.redis { |c| c.call("HINCRBY", "itest:items", item.to_s, 1) }
    sleep PACE
  end

  %i[on_start on_resume on_stop on_complete].each do |hook|
    define_method(hook) do
      Sidekiq.redis { |c| c.call("RPUSH", "itest:hooks", "#{hook} #{jid} #{@_cursor.inspect}") }
    end
  end
end
