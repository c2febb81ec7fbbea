/**
 * Registers an HTTP function from the route table (shared/adapters/openapi/routes.ts): the method and route come from the
 * declaration the OpenAPI document is written from, so what is served and what is documented are one list.
 * authLevel is always anonymous: the handlers authenticate themselves (functions/lib/auth.ts).
 */
import { app, type HttpFunctionOptions } from '@azure/functions';
import { routeNamed, type RouteName } from '../../shared/adapters/openapi/routes';

export function registerRoute(name: RouteName, options: Omit<HttpFunctionOptions, 'route' | 'methods' | 'authLevel'>): void {
  const declared = routeNamed(name);
  app.http(name, { ...options, route: declared.route, methods: [declared.method], authLevel: 'anonymous' });
}
