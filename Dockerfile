# The service image used by docker-compose.yml. Dependencies come from its variables, so
# nothing inside starts Kafka, Redis or the registry (no Java, Maven or redis-server needed).
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# patches/ are applied to node_modules by the postinstall script
COPY patches ./patches
# `npm install` rather than `npm ci`: it installs the locked versions too, and the npm of Node 24
# (npm 11) refuses `ci` on this lock file, which leaves out other platforms' chdb libraries
RUN npm install --no-audit --no-fund && touch node_modules/.install-stamp
COPY . .
# the service runs compiled: dist/ beside the sources, whose schemas, migrations and dashboard it reads
RUN node scripts/build.cjs
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
EXPOSE 8080
CMD ["node", "--max-semi-space-size=64", "dist/service/main.js"]
