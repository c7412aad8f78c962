#!/usr/bin/env ruby
# Push COUNT jobs of CLASS on QUEUE with Sidekiq::Client.push_bulk, each with different args built
# from Ruby values (nested objects, unicode, nil, big integers, floats, empty lists...), and print
# one line per job: "<jid>\t<the job's args as Sidekiq's JSON encoder writes them>".
#   env: REDIS_URL, REDIS_NAMESPACE (see sidekiq_env.rb),
#        QUEUE (default "default"), CLASS (default "GoRecord"), COUNT (default 500)
require "json"
require_relative "sidekiq_env"

def args_for(i)
  case i % 10
  when 0 then [i, "plain string #{i}"]
  when 1 then [{"user" => {"id" => i, "roles" => ["admin", "ops"],
    "meta" => {"deep" => {"deeper" => [1, [2, [3, {"k" => nil}]]]}}}}]
  when 2 then ["unicode #{i}: héllo wörld, 日本語, emoji 🎉, rtl שלום, nul \u0000 bell \u0007",
    "quotes \" and \\ backslash, <tags> & amps, slash /, newline\nand tab\t"]
  when 3 then [nil, i, [nil], {"nil" => nil}]
  when 4 then [12345678901234567890, -9223372036854775808, 2**70 + i, 9007199254740993]
  when 5 then [[], {}, [[]], [{}], i]
  when 6 then []
  when 7 then [1.5, -2.25, 1.0e-7, 6.02e+23, 0.1 + i]
  when 8 then [true, false, "", " ", "x" * 500, i]
  when 9 then [{"a" => 1, "b" => [true, nil, "s"], "c" => {"d" => 12345678901234567890}}, "last #{i}"]
  end
end

count = Integer(ENV.fetch("COUNT", "500"))
all_args = Array.new(count) { |i| args_for(i) }
jids = Sidekiq::Client.push_bulk("class" => ENV.fetch("CLASS", "GoRecord"),
  "queue" => ENV.fetch("QUEUE", "default"), "args" => all_args)
raise "pushed #{jids.size} of #{count} jobs" unless jids.size == count
jids.zip(all_args).each { |jid, args| puts "#{jid}\t#{JSON.generate(args)}" }
