// kafkajs's transactional producer against placement-sim: one transaction committed, one aborted, then a
// read_committed consumer (readUncommitted: false) reads the topic from the start. Prints one JSON line:
// {"committed": [...], "aborted": [...], "read": [[partition, value], ...]}.
// Usage: node transactions.js HOST:PORT TOPIC
"use strict";
const { Kafka, logLevel } = require("kafkajs");

const [bootstrap, topic] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "kafkajs-txn",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 5000,
  requestTimeout: 10000,
  retry: { retries: 8, initialRetryTime: 100 },
});

async function main() {
  const producer = kafka.producer({
    transactionalId: "kafkajs-txn",
    maxInFlightRequests: 1,
    idempotent: true,
    transactionTimeout: 20000,
  });
  await producer.connect();
  const committed = [];
  const aborted = [];
  let txn = await producer.transaction();
  for (let i = 0; i < 9; i++) {
    const value = `committed-${i}`;
    committed.push([i % 3, value]);
    await txn.send({ topic, messages: [{ value, partition: i % 3 }] });
  }
  await txn.commit();
  txn = await producer.transaction();
  for (let i = 0; i < 6; i++) {
    const value = `aborted-${i}`;
    aborted.push([i % 3, value]);
    await txn.send({ topic, messages: [{ value, partition: i % 3 }] });
  }
  await txn.abort();
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: "kafkajs-reader", readUncommitted: false, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const read = [];
  let last = Date.now();
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      read.push([partition, message.value.toString()]);
      last = Date.now();
    },
  });
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline && (read.length < committed.length || Date.now() - last < 1500)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await consumer.disconnect();
  console.log(JSON.stringify({ committed, aborted, read }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
