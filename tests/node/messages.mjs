// One non-streamed and one streamed call through the official TypeScript SDK, against the
// gateway in LLMEU_BASE_URL with the key in LLMEU_API_KEY; prints what came back as JSON.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({
  baseURL: process.env.LLMEU_BASE_URL,
  apiKey: process.env.LLMEU_API_KEY,
  maxRetries: 0,
});
const model = process.env.LLMEU_MODEL ?? "fake-model";

const message = await client.messages.create({
  model,
  max_tokens: 50,
  messages: [{ role: "user", content: "hello [[chunks=3]]" }],
});

const deltas = [];
const stream = client.messages.stream({
  model,
  max_tokens: 50,
  messages: [{ role: "user", content: "hello [[chunks=4]]" }],
});
stream.on("text", (text) => deltas.push(text));
const final = await stream.finalMessage();

console.log(JSON.stringify({ message, deltas, final }));
