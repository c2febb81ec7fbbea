/** GET /api/health: liveness of the Function App, with the app version (anonymous; no dependencies touched). */
import { type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { appVersionSetting } from '../shared/adapters/config';
import { registerRoute } from './lib/route';

/** The app's package.json version, found from here (functions/ in source, dist/functions/ when compiled). */
function appVersion(): string {
  let dir = __dirname;
  for (let i = 0; i < 4; i++) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: string };
      if (pkg.version) return pkg.version;
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}

const version = appVersionSetting() ?? appVersion();

export function health(_req: HttpRequest): HttpResponseInit {
  return { status: 200, jsonBody: { status: 'ok', version } };
}

registerRoute('health', { handler: health });
