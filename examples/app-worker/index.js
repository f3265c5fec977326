// A team's own Worker running its job types: the platform's consumer delivers each job to it
// over a service binding, signed as every delivery is (docs/app-guide.md "Your own job types").
// Its answer is the job's outcome: 2xx success, 429/5xx a retry, any other 4xx final.
import { verifyDelivery } from "@cf-jobs/client";

const handlers = {
  send_invoice: async ({ customer }) => ({ sent_to: customer }),
};

export default {
  async fetch(request, env) {
    const check = await verifyDelivery(request, { secrets: env.SIGNING_SECRET });
    if (!check.valid) return Response.json({ error: check.reason }, { status: 401 });
    const { type, payload } = JSON.parse(check.body);
    const handler = handlers[type];
    if (!handler) return Response.json({ error: `no handler for ${type}` }, { status: 404 });
    return Response.json({ job: check.job, result: await handler(payload, env) });
  },
};
