#!/usr/bin/env ruby
# Sidekiq 7.3's side of an iterable job's state, for the iteration interop tests:
#   iterable.rb cancel <jid>   Sidekiq::Client#cancel! (prints the flag it reads back)
#   iterable.rb state <jid>    the state as Sidekiq's fetch_previous_iteration_state reads it,
#                              as JSON {"ex":<int>,"c":<cursor>,"rt":<float>,"cancelled":<int|null>}
#   iterable.rb push <n>       pushes IterWalk [n] with Sidekiq's client (prints the jid)
require "json"
require_relative "sidekiq_env"
require_relative "iterable_jobs"

cmd, arg = ARGV
case cmd
when "cancel"
  puts Sidekiq::Client.new.cancel!(arg)
when "state"
  state = Sidekiq.redis { |c| c.call("HGETALL", "it-#{arg}") }
  state = Hash[*state] if state.is_a?(Array)
  out = {"ex" => state["ex"].to_i, "c" => state["c"] && Sidekiq.load_json(state["c"]), "rt" => state["rt"].to_f,
         "cancelled" => state["cancelled"]&.to_i}
  puts JSON.generate(out)
when "push"
  puts IterWalk.perform_async(Integer(arg))
else
  abort "usage: iterable.rb cancel|state <jid> | push <n>"
end
