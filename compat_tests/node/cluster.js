'use strict'
// The cluster suite's rows (`run.py --suite cluster`) for kafkajs. Each row asks the runner for
// its steps on stdout and reads the answers on stdin (the phase protocol of
// compat_tests/cluster_suite.py); the driver kills nothing itself.

const readline = require('readline')

module.exports = function clusterScenarios ({ Kafka, clientOptions, check, ScenarioFailed }) {
  let lines = null
  const waiting = []
  const queued = []
  function nextLine () {
    if (lines === null) {
      lines = readline.createInterface({ input: process.stdin })
      lines.on('line', l => { const w = waiting.shift(); w ? w(l) : queued.push(l) })
      lines.on('close', () => { while (waiting.length) waiting.shift()(null) })
    }
    if (queued.length) return Promise.resolve(queued.shift())
    return new Promise(resolve => waiting.push(resolve))
  }

  async function ask (ctx, step, data = {}) {
    process.stdout.write(JSON.stringify({ cluster: step, scenario: ctx.scenario, ...data }) + '\n')
    const line = await nextLine()
    if (line === null) throw new ScenarioFailed(`no answer from the runner to ${step}`)
    const reply = JSON.parse(line)
    if (!reply.ok) throw new ScenarioFailed(`${step}: ${reply.error}`)
    return reply
  }

  // every broker as a seed: the one a client starts from may be the one killed
  const kafka = (retries = 30) => new Kafka({
    ...clientOptions(),
    brokers: clientOptions().brokers[0].split(','),
    retry: { retries, initialRetryTime: 200, maxRetryTime: 3000 }
  })

  function errorTypes (e) {
    const out = []
    const walk = x => {
      if (!x || out.length > 20) return
      if (x.type) out.push(x.type)
      walk(x.cause || x.originalError)
      if (Array.isArray(x.errors)) x.errors.forEach(walk)
    }
    walk(e)
    return out
  }

  async function acksAll (ctx) {
    const s = await ask(ctx, 'setup')
    const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const acked = []
    const failed = []
    try {
      for (let i = 0; i < 300; i++) {
        if (i === 100) await ask(ctx, 'kill')
        try {
          await producer.send({ topic: s.topic, acks: -1, messages: [{ value: String(i), partition: i % 3 }] })
          acked.push(String(i))
        } catch (e) {
          failed.push(`${e.name}: ${e.message}`)
        }
      }
    } finally {
      await producer.disconnect()
    }
    check(failed.length === 0, `${failed.length} sends failed: ${failed[0]}`)
    const v = await ask(ctx, 'verify', { acked })
    await ask(ctx, 'restore')
    return v.detail
  }

  async function notEnoughReplicas (ctx) {
    const s = await ask(ctx, 'setup')
    await ask(ctx, 'kill')
    async function produce (acks) {
      const producer = kafka(0).producer({ idempotent: false, retry: { retries: 0 } })
      await producer.connect()
      try {
        await producer.send({ topic: s.topic, acks, messages: [{ value: 'x', partition: s.partition }] })
        return null
      } catch (e) {
        return e
      } finally {
        await producer.disconnect()
      }
    }
    const err = await produce(-1)
    const types = errorTypes(err)
    check(types.includes('NOT_ENOUGH_REPLICAS'),
      `acks=all with one in-sync replica: ${err && `${err.name}: ${err.message}`} (types ${types}), expected NOT_ENOUGH_REPLICAS`)
    const err1 = await produce(1)
    check(err1 === null, `acks=1 with one in-sync replica failed: ${err1 && err1.message}`)
    await ask(ctx, 'restore')
    return `acks=all: ${err.name} (${types[0]}); acks=1 accepted`
  }

  async function groupCoordinator (ctx) {
    const s = await ask(ctx, 'setup')
    const consumer = kafka().consumer({ groupId: s.group })
    await consumer.connect()
    const seen = new Set()
    const next = {} // partition -> the offset after the last record read
    let killed = false
    let killError = null
    const commit = () => consumer.commitOffsets(Object.entries(next).map(([p, o]) => ({ topic: s.topic, partition: Number(p), offset: o })))
    try {
      await consumer.subscribe({ topics: [s.topic], fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          seen.add(message.value.toString())
          next[partition] = (BigInt(message.offset) + 1n).toString()
          try { await commit() } catch (e) { /* the coordinator moving: a later commit covers it */ }
          if (seen.size >= 20 && !killed) {
            killed = true
            try { await ask(ctx, 'kill') } catch (e) { killError = e }
          }
        }
      })
      await ctx.waitFor(`${s.count} records`, async () => seen.size >= s.count || killError !== null)
      if (killError) throw killError
      await ctx.waitFor('a final commit', async () => { await commit(); return true })
    } finally {
      await consumer.disconnect()
    }
    const v = await ask(ctx, 'verify', { values: [...seen].sort() })
    await ask(ctx, 'restore')
    return v.detail
  }

  return {
    'failover-acks-all': acksAll,
    'failover-not-enough-replicas': notEnoughReplicas,
    'failover-group-coordinator': groupCoordinator
  }
}
