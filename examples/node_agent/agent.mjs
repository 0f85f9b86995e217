// A capital-city agent on the official `openai` npm package, written the usual way.
// It knows nothing of evalrunner: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY,
// which evalrunner points at its capture proxy. Usage: node agent.mjs "Capitals of: France, Japan"
// Prints {"final_answer": ...} as its last stdout line (null: it gave up).
import OpenAI from "openai";

const CAPITALS = { France: "Paris", Japan: "Tokyo", Peru: "Lima", Chad: "N'Djamena" };
const SYSTEM = process.env.AGENT_SYSTEM ?? "You answer questions about capitals. Use the lookup tool.";
const MODEL = process.env.AGENT_MODEL ?? "gpt-4o-mini";
const STREAM = process.env.AGENT_STREAM === "1";
const TOOLS = [
  {
    type: "function",
    function: {
      name: "lookup",
      description: "The capital of a country.",
      parameters: {
        type: "object",
        properties: { country: { type: "string" } },
        required: ["country"],
      },
    },
  },
];

function lookup(args) {
  let parsed = {};
  try {
    parsed = JSON.parse(args);
  } catch {
    return "unknown";
  }
  return CAPITALS[parsed.country] ?? "unknown";
}

async function ask(client, messages) {
  if (!STREAM) {
    const completion = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    return completion.choices[0].message;
  }
  const stream = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, stream: true });
  const message = { role: "assistant", content: "", tool_calls: [] };
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      message.content += choice.delta.content ?? "";
      for (const tc of choice.delta.tool_calls ?? []) {
        const call = (message.tool_calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
        call.id = tc.id ?? call.id;
        call.function.name += tc.function?.name ?? "";
        call.function.arguments += tc.function?.arguments ?? "";
      }
    }
  }
  if (!message.tool_calls.length) delete message.tool_calls;
  message.content ||= null;
  return message;
}

async function main() {
  const task = process.argv[2];
  if (!task) {
    console.error("usage: node agent.mjs TASK");
    process.exit(2);
  }
  const client = new OpenAI({ maxRetries: 0 });
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: task },
  ];
  for (let turn = 0; turn < 4; turn++) {
    let message;
    try {
      message = await ask(client, messages);
    } catch (err) {
      // A conversation grown past the model's context window ends the task, not the agent:
      // it gives up with no answer, as its contract says. Anything else is a crash.
      if (err instanceof OpenAI.BadRequestError && /context/i.test(err.message)) break;
      throw err;
    }
    if (!message.tool_calls || message.tool_calls.length === 0) {
      console.log(JSON.stringify({ final_answer: message.content }));
      return;
    }
    messages.push(message);
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: lookup(call.function.arguments) });
    }
  }
  console.log(JSON.stringify({ final_answer: null }));
}

main().catch((err) => {
  console.error(`agent failed: ${err.message}`);
  process.exit(1);
});
