/**
 * GET /api/dashboard: the web dashboard, one self-contained page (anonymous). It reads the job API next to it
 * (GET /api/jobs, /api/jobs/{id}, both anonymous) and cancels through DELETE /api/jobs/{id} with the function key
 * the user types into the page. The page is built by web/build.ts into a string module compiled with the app,
 * so it ships inside the deployed package (dist/) and is never read from disk.
 */
import { type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { dashboardCsp, dashboardEtag, dashboardHtml } from '../web/generated/dashboardPage';
import { registerRoute } from './lib/route';

export function dashboard(request: HttpRequest): HttpResponseInit {
  const headers: Record<string, string> = {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': dashboardCsp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    // Revalidate every time (cheap: the ETag answers 304), so a deployment shows at once.
    'Cache-Control': 'no-cache',
    ETag: dashboardEtag,
  };
  if (request.headers.get('if-none-match') === dashboardEtag) return { status: 304, headers };
  return { status: 200, headers, body: dashboardHtml };
}

registerRoute('dashboard', { handler: dashboard });
